"""The fp16 emulation rounds only where rounding can change a value: not after ops whose results from fp16 values
are fp16 values already (moves, selections, Floor/Ceil/Round/Sign)."""

from __future__ import annotations

import numpy as np
import pytest

from atc_wrap.emulation import emulate_precision


@pytest.mark.parametrize("op", ["Floor", "Ceil", "Round", "Sign", "Relu"])
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
