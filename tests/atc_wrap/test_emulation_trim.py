"""The fp16 emulation rounds only where rounding can change a value: not after ops whose results from fp16 values
are fp16 values already (moves, selections, Floor/Ceil/Round/Sign); and a rounding due before an op that commutes
with it (Relu, MaxPool, moves) is made after that op, with the same values."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from atc_wrap.standin.emulation import emulate_precision, emulated_value, tensors_rounded_later
from tests.atc_wrap.outputs import onnx_tensors


@pytest.mark.parametrize("op", ["Floor", "Ceil", "Round", "Sign"])
def test_no_rounding_after_an_op_whose_results_fp16_holds(op: str) -> None:
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    weights = (rng.normal(size=(8, 8)) * 30).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["product"]), helper.make_node(op, ["product"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])],
        [numpy_helper.from_array(weights, "w")])
    model = onnx.shape_inference.infer_shapes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    emulation = emulate_precision(model, "force_fp16", fp16_inputs=set(), fp16_outputs=set())
    casts = [node for node in model.graph.node if node.op_type == "Cast"]
    assert not [node for node in casts if "y" in node.input or node.input[0].startswith("y/")]
    assert emulation.rounded_tensors == 2  # x's and the MatMul's: nothing after the op
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (found,) = session.run(None, {"x": rng.normal(size=(4, 8)).astype(np.float32)})
    assert np.array_equal(found, found.astype(np.float16).astype(np.float32))  # fp16 values all the same


def _conv_net(second_reader: str | None = None) -> Any:
    """x -> Conv -> Relu -> MaxPool -> y; with `second_reader`, that op also reads the Conv's output, into z."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(1)
    nodes = [helper.make_node("Conv", ["x", "w"], ["conv"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["conv"], ["relu"]),
             helper.make_node("MaxPool", ["relu"], ["y"], kernel_shape=[2, 2], strides=[2, 2])]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4, 4, 4])]
    if second_reader:
        nodes.append(helper.make_node(second_reader, ["conv"], ["z"]))
        outputs.append(helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 4, 8, 8]))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 8, 8])],
                              outputs, [numpy_helper.from_array(rng.normal(size=(4, 3, 3, 3)).astype(np.float32),
                                                                "w")])
    return onnx.shape_inference.infer_shapes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))


def _rounded_after_every_op(model: Any) -> Any:
    """The documented rule by hand: a Cast pair after the Conv, Relu and MaxPool, and the input and weights
    rounded, in a copy of the un-emulated `model`."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    copy = onnx.ModelProto.FromString(model.SerializeToString())
    graph = copy.graph
    weights = numpy_helper.to_array(graph.initializer[0])
    graph.initializer[0].CopyFrom(numpy_helper.from_array(weights.astype(np.float16).astype(np.float32), "w"))
    nodes = [helper.make_node("Cast", ["x"], ["x16"], to=TensorProto.FLOAT16),
             helper.make_node("Cast", ["x16"], ["xr"], to=TensorProto.FLOAT)]
    for node in graph.node:
        node.input[:] = ["xr" if n == "x" else n for n in node.input]
        raw = node.output[0] + "/raw"
        target = node.output[0]
        node.output[0] = raw
        nodes += [node, helper.make_node("Cast", [raw], [raw + "16"], to=TensorProto.FLOAT16),
                  helper.make_node("Cast", [raw + "16"], [target], to=TensorProto.FLOAT)]
    del graph.node[:]
    graph.node.extend(nodes)
    return copy


@pytest.mark.parametrize("between", ["Relu", "Identity"])  # Identity: -inf from the Conv reaches the MaxPool
def test_a_rounding_moves_past_relu_and_maxpool_with_the_same_values(between: str) -> None:
    import onnx

    original = _conv_net()
    original.graph.node[1].op_type = between
    model = onnx.ModelProto.FromString(original.SerializeToString())
    emulation = emulate_precision(model, "force_fp16", fp16_inputs=set(), fp16_outputs=set())
    readers = {n for node in model.graph.node if node.op_type == "Cast" for n in node.input}
    assert "conv" not in readers and "relu" not in readers  # the Conv feeds the Relu directly: ORT can fuse them
    assert tensors_rounded_later(model) == {"conv", "relu"} and emulation.rounded_later == 2
    assert emulation.rounded_tensors == 2  # x's at entry and the MaxPool's
    rng = np.random.default_rng(2)
    x = (rng.normal(size=(2, 3, 8, 8)) * 3).astype(np.float32)
    x[1, :, 2:5, 2:5] = 40000.0  # past fp16's 65504 after the Conv: inf on both sides, in the same places
    x[0, :, :, :] = -40000.0  # windows of -inf, where ONNX Runtime's MaxPool starts from -3.4e38
    names = ["conv", "relu", "y"]
    got = onnx_tensors(model, {"x": x}, names)
    want = onnx_tensors(_rounded_after_every_op(original), {"x": x}, names)
    assert np.isposinf(want[2]).any() and np.isfinite(want[2]).any()
    assert np.isneginf(want[2]).any() == (between == "Identity")
    for name, have, expected in zip(names, got, want, strict=True):
        assert np.array_equal(emulated_value(have, name, tensors_rounded_later(model)), expected, equal_nan=True), name


@pytest.mark.parametrize("reader", ["Floor", "Sigmoid"])
def test_no_rounding_moves_past_an_op_it_does_not_commute_with_or_off_a_tensor_read_twice(reader: str) -> None:
    model = _conv_net(second_reader=reader)
    emulate_precision(model, "force_fp16", fp16_inputs=set(), fp16_outputs=set())
    producers = {o: node for node in model.graph.node for o in node.output}
    assert producers["conv"].op_type == "Cast"  # rounded where it is made: two ops read it
    assert producers["relu"].op_type == "Relu"  # fp16 in, fp16 out
    assert producers["y"].op_type == "Cast"  # ONNX Runtime's MaxPool can give -3.4e38 (a window of -inf)
    assert tensors_rounded_later(model) == frozenset()
    floor_only = _conv_net()
    floor_only.graph.node[1].op_type = "Floor"
    emulate_precision(floor_only, "force_fp16", fp16_inputs=set(), fp16_outputs=set())
    assert {o: n for n in floor_only.graph.node for o in n.output}["conv"].op_type == "Cast"
    assert tensors_rounded_later(floor_only) == frozenset()


def test_no_rounding_moves_off_a_tensor_a_subgraph_gives_back() -> None:
    """An If body that returns the Conv's output by name reads it too: it is rounded where it is made."""
    from onnx import TensorProto, helper

    model = _conv_net()
    body = helper.make_graph([], "same", [], [helper.make_tensor_value_info("conv", TensorProto.FLOAT, None)])
    model.graph.input.append(helper.make_tensor_value_info("flag", TensorProto.BOOL, []))
    model.graph.node.append(helper.make_node("If", ["flag"], ["z"], then_branch=body, else_branch=body))
    model.graph.output.append(helper.make_tensor_value_info("z", TensorProto.FLOAT, None))
    emulate_precision(model, "force_fp16", fp16_inputs=set(), fp16_outputs=set())
    assert {o: n for n in model.graph.node for o in n.output}["conv"].op_type == "Cast"
    assert tensors_rounded_later(model) == frozenset()
