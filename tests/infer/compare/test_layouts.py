"""Layouts tracked through every way tf2onnx moves a tensor: on small ONNX graphs written for one move each, and on
a real tf2onnx conversion with its inputs_as_nchw option (the graph input itself NCHW)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from infer.compare._layers.layout_reading import aligned_to_golden
from infer.compare._layers.layouts import NCHW, Layout, read_in_tf_layout, shapes_of, track_layouts
from infer.compare._layers.onnx_graph import OnnxGraph

Node = tuple[str, list[str], list[str], dict[str, Any]]


def _layouts(input_shape: list[int | str], nodes: list[Node], constants: dict[str, list[int]] | None = None,
             **options: Any) -> dict[str, Layout]:
    import onnx
    from onnx import TensorProto, helper

    made = [helper.make_node(op, inputs, outputs, name=f"n{i}_{op}", **attrs)
            for i, (op, inputs, outputs, attrs) in enumerate(nodes)]
    initializers = [helper.make_tensor(name, TensorProto.INT64, [len(values)], values)
                    for name, values in (constants or {}).items()]
    graph = helper.make_graph(made, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, input_shape)],
                              [helper.make_tensor_value_info(nodes[-1][2][0], TensorProto.FLOAT, None)],
                              initializer=initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    return track_layouts(OnnxGraph(model), shapes_of(onnx.shape_inference.infer_shapes(model)), **options)


def _read(layouts: dict[str, Layout], name: str, tf_value: np.ndarray, onnx_value: np.ndarray) -> np.ndarray:
    perm = layouts[name].perm
    assert perm is not None, layouts[name].unknown_reason
    read = read_in_tf_layout(tuple(tf_value.shape), onnx_value, perm)
    assert read is not None
    return read


def test_a_reshape_standing_for_the_input_transpose_of_a_1_channel_image_is_nchw() -> None:
    """tf2onnx writes NHWC -> NCHW of a (2,5,6,1) image as a Reshape to (2,1,5,6): the conv after it is NCHW."""
    layouts = _layouts([2, 5, 6, 1], [
        ("Reshape", ["x", "to_nchw"], ["image"], {}),
        ("Relu", ["image"], ["relu"], {}),
        ("Transpose", ["relu"], ["back"], {"perm": [0, 2, 3, 1]}),
    ], {"to_nchw": [2, 1, 5, 6]})
    assert layouts["image"].perm == layouts["relu"].perm == NCHW
    assert layouts["back"].perm == (0, 1, 2, 3)
    # Where H = W = C: the tracked layout reads an (8,8,8) tensor in its real layout.
    layouts = _layouts([2, 10, 10, 1], [
        ("Reshape", ["x", "to_nchw"], ["image"], {}),
        ("Relu", ["image"], ["relu"], {}),
    ], {"to_nchw": [2, 1, 10, 10]})
    assert layouts["relu"].perm == NCHW


def test_squeeze_and_unsqueeze_drop_and_insert_axes_of_a_permuted_tensor() -> None:
    """(2,1,6,3) NHWC held as NCHW (2,3,1,6); squeezed (TF's squeeze of H: (2,6,3)) and unsqueezed back."""
    rng = np.random.default_rng(0)
    layouts = _layouts([2, 1, 6, 3], [
        ("Transpose", ["x"], ["nchw"], {"perm": [0, 3, 1, 2]}),
        ("Squeeze", ["nchw", "h"], ["squeezed"], {}),
        ("Unsqueeze", ["squeezed", "h"], ["unsqueezed"], {}),
        ("Relu", ["unsqueezed"], ["out"], {}),
    ], {"h": [2]})
    tf_squeezed = rng.normal(size=(2, 6, 3))
    assert layouts["squeezed"].perm == (0, 2, 1)
    assert np.array_equal(_read(layouts, "squeezed", tf_squeezed, np.transpose(tf_squeezed, (0, 2, 1))), tf_squeezed)
    tf_expanded = tf_squeezed[:, None]  # TF's expand_dims at axis 1: (2,1,6,3); ONNX holds (2,3,1,6)
    onnx_expanded = np.transpose(tf_squeezed, (0, 2, 1))[:, :, None]
    assert np.array_equal(_read(layouts, "out", tf_expanded, onnx_expanded), tf_expanded)


def test_a_reshape_regrouping_a_permuted_tensor_leaves_its_layout_unknown_and_says_why() -> None:
    layouts = _layouts([2, 4, 4, 3], [
        ("Transpose", ["x"], ["nchw"], {"perm": [0, 3, 1, 2]}),
        ("Reshape", ["nchw", "flat_shape"], ["flat"], {}),
        ("Relu", ["flat"], ["after"], {}),
        ("Reshape", ["x", "flat_shape"], ["tf_flat"], {}),  # TF's own reshape, of TF's layout: TF's layout
    ], {"flat_shape": [2, 48]})
    reason = ("Reshape n1_Reshape reads nchw held as NCHW (the converter's): how its output's axes lie is not "
              "tracked through it")
    assert layouts["flat"] == layouts["after"] == Layout(None, reason)
    assert layouts["tf_flat"].perm == (0, 1)
    golden = np.zeros((2, 48), dtype=np.float32)
    aligned, said = aligned_to_golden(golden, golden.copy(), layouts["after"])
    assert aligned is None and said == f"layout unknown: {reason}"


def test_inputs_in_two_layouts_make_an_unknown_one() -> None:
    layouts = _layouts([2, 4, 4, 3], [
        ("Transpose", ["x"], ["nchw"], {"perm": [0, 3, 1, 2]}),
        ("Transpose", ["x"], ["other"], {"perm": [0, 3, 2, 1]}),
        ("Add", ["nchw", "other"], ["sum"], {}),
    ])
    assert layouts["sum"].perm is None and "reads nchw held as NCHW (the converter's) and other held as" in \
        layouts["sum"].unknown_reason


def test_the_onnx_name_of_tfs_own_reshape_holds_that_reshapes_result() -> None:
    """A Reshape carrying the name of TF's own Reshape (2,5,6,1) -> (2,1,5,6) holds TF's result as it is."""
    nodes: list[Node] = [("Reshape", ["x", "shape"], ["reshaped"], {})]
    constants = {"shape": [2, 1, 5, 6]}
    assert _layouts([2, 5, 6, 1], nodes, constants)["reshaped"].perm == NCHW  # the converter's move
    own = _layouts([2, 5, 6, 1], nodes, constants, tf_ops={"reshaped": "Reshape"})
    assert own["reshaped"].perm == (0, 1, 2, 3)


def test_a_dynamic_batch_does_not_hide_a_reshape_standing_for_a_transpose() -> None:
    """Shape inference names the batch of a Reshape's output afresh (unk__0 for unk__1): the one open dim is the
    batch by the element count, so the Reshape still only moves the size-1 channel."""
    layouts = _layouts(["batch", 10, 10, 1], [
        ("Reshape", ["x", "to_nchw"], ["image"], {}),
        ("Relu", ["image"], ["relu"], {}),
    ], {"to_nchw": [-1, 1, 10, 10]})
    assert layouts["relu"].perm == NCHW
    # Two dims shape inference cannot give: whether it stands for a transpose is not known, and said.
    layouts = _layouts(["batch", "height", 10, 1], [
        ("Reshape", ["x", "to_nchw"], ["image"], {}),
        ("Relu", ["image"], ["relu"], {}),
    ], {"to_nchw": [-1, 1, 0, 10]})
    assert layouts["relu"].perm is None and layouts["relu"].unknown_reason == (
        "Reshape n0_Reshape: shape inference does not give its shapes, so whether it stands for a transpose is not "
        "known")


def test_tfs_own_transposes_give_each_tensor_its_axes_and_a_reshape_after_them_is_unknown() -> None:
    from infer.compare._layers.tensors import GraphTensor
    from infer.compare._layers.tf_frames import relative_to_tf, tf_frames

    def op(name: str, op_type: str, *inputs: str, perm: tuple[int, ...] | None = None) -> GraphTensor:
        return GraphTensor(name, op_type, "float32", True, inputs, axes=perm)

    tensors = [op("conv:0", "Conv2D", "x:0", "w:0"), op("swap:0", "Transpose", "conv:0", "p:0", perm=(0, 2, 1, 3)),
               op("relu:0", "Relu", "swap:0"), op("back:0", "Transpose", "relu:0", "p:0", perm=(0, 2, 1, 3)),
               op("flat:0", "Reshape", "relu:0", "s:0"), op("sum:0", "AddV2", "relu:0", "conv:0"),
               op("nchw:0", "Transpose", "conv:0", "p:0", perm=NCHW), op("gap:0", "Mean", "nchw:0", "a:0", perm=(2, 3)),
               op("c_mean:0", "Mean", "swap:0", "a:0", perm=(3,)), op("h_mean:0", "Mean", "swap:0", "a:0", perm=(2,))]
    frames = tf_frames(tensors, {t.name for t in tensors})
    assert frames["swap:0"] == frames["relu:0"] == (0, 2, 1, 3)
    assert "back:0" not in frames and "conv:0" not in frames  # the inputs' axes again / never moved
    assert frames["flat:0"] == ("Reshape flat:0 reads relu:0, which TF's own transposes hold as TensorFlow's axes "
                                "in order [0, 2, 1, 3] of the inputs' axes: how its output's axes lie is not "
                                "tracked through it")
    assert isinstance(frames["sum:0"], str)  # a swapped tensor added to one that is not
    assert "gap:0" not in frames  # NCHW code's global mean over H, W: (N, C), the inputs' axes again
    assert frames["c_mean:0"] == (0, 2, 1)  # (N, W, H, C) reduced over C: W, H still swapped
    assert "h_mean:0" not in frames  # reduced over H: (N, W, C), in the inputs' order again
    # ONNX holds relu:0 as NCHW of the inputs' axes: relative to TF's swapped tensor, N C W H.
    assert relative_to_tf(Layout(NCHW), frames["relu:0"]).perm == (0, 3, 2, 1)


def build_grayscale(tf: Any, batch: int | None) -> None:
    """images (batch,6,6,1) -> conv 3x3 to 6 channels (so H = W = C downstream: (2,6,6,6)) -> relu -> depthwise
    -> max pool -> mean -> dense."""
    tf1 = tf.compat.v1
    rng = np.random.default_rng(5)

    def const(*shape: int) -> Any:
        return tf.constant(rng.normal(scale=0.4, size=shape).astype(np.float32))

    x = tf1.placeholder(tf.float32, [batch, 6, 6, 1], name="images")
    h = tf.nn.relu(tf.nn.conv2d(x, const(3, 3, 1, 6), 1, "SAME"), name="relu")
    h = tf.nn.depthwise_conv2d(h, const(3, 3, 6, 1), [1, 1, 1, 1], "SAME", name="dw")
    h = tf.nn.max_pool2d(h, 2, 2, "VALID", name="pool")
    tf.matmul(tf.reduce_mean(h, axis=[1, 2], name="gap"), const(6, 3), name="logits")


_NAMES = ["relu:0", "dw:0", "pool:0", "gap:0", "logits:0"]


def _converted(batch: int | None, **tf2onnx_options: Any) -> tuple[Any, dict[str, np.ndarray], np.ndarray]:
    """tf2onnx's model of the grayscale graph, TF's value of each tensor in _NAMES on one batch, and the batch."""
    import tensorflow as tf
    import tf2onnx

    graph = tf.Graph()
    with graph.as_default():
        build_grayscale(tf, batch)
    images = np.random.default_rng(6).normal(size=(2, 6, 6, 1)).astype(np.float32)
    with tf.compat.v1.Session(graph=graph) as session:
        golden = dict(zip(_NAMES, session.run(_NAMES, {"images:0": images}), strict=True))
    model, _ = tf2onnx.convert.from_graph_def(graph.as_graph_def(), input_names=["images:0"],
                                              output_names=["logits:0"], opset=13, **tf2onnx_options)
    return model, golden, images


def _read_every_tensor(model: Any, golden: dict[str, np.ndarray], feed: np.ndarray,
                       starts: dict[str, tuple[int, ...]] | None = None) -> dict[str, Layout]:
    """Every TF tensor ONNX keeps, read in its tracked layout, is TF's; the layouts."""
    import onnx

    from tests.atc_wrap.outputs import onnx_tensors

    kept = [name for name in _NAMES if any(name in node.output for node in model.graph.node)]
    assert len(kept) >= 4
    values = onnx_tensors(model, {"images:0": feed}, kept)
    layouts = track_layouts(OnnxGraph(model), shapes_of(onnx.shape_inference.infer_shapes(model)), starts=starts)
    for name, value in zip(kept, values, strict=True):
        aligned, said = aligned_to_golden(golden[name], value, layouts[name])
        assert aligned is not None, (name, said)
        np.testing.assert_allclose(aligned, golden[name], rtol=1e-4, atol=1e-5, err_msg=name)
    return layouts


@pytest.mark.slow
def test_a_grayscale_graph_of_unknown_batch_is_read_right_tensor_by_tensor() -> None:
    model, golden, images = _converted(None)
    assert model.graph.node[0].op_type == "Reshape"  # the input transpose, as a Reshape
    assert _read_every_tensor(model, golden, images)["relu:0"].perm == NCHW


@pytest.mark.slow
def test_inputs_as_nchw_the_graph_input_is_nchw_and_every_tensor_is_read_right() -> None:
    """tf2onnx's inputs_as_nchw makes the ONNX input NCHW (infer convert does not offer it: the tracker takes the
    graph input's layout as a start)."""
    import onnx

    model, golden, images = _converted(2, inputs_as_nchw=["images:0"])
    assert [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim] == [2, 1, 6, 6]
    layouts = _read_every_tensor(model, golden, np.transpose(images, NCHW), {"images:0": NCHW})
    assert layouts["relu:0"].perm == NCHW  # (2,6,6,6): only the tracked layout tells it
    # Not told that the input is NCHW, the tracker reads relu:0 wrong where H = W = C: the start matters.
    from tests.atc_wrap.outputs import onnx_tensors

    wrong = track_layouts(OnnxGraph(model), shapes_of(onnx.shape_inference.infer_shapes(model)))
    value = onnx_tensors(model, {"images:0": np.transpose(images, NCHW)}, ["relu:0"])[0]
    aligned, _ = aligned_to_golden(golden["relu:0"], value, wrong["relu:0"])
    assert aligned is None or not np.allclose(aligned, golden["relu:0"], atol=1e-3)


def test_past_tfs_own_transposes_a_shape_that_fits_one_reading_is_read_so() -> None:
    """An attention block: TF's own transposes, then a BatchMatMul the tracking does not follow; tf2onnx computes
    it in TF's axes, so a tensor whose non-1 dims all differ is read the one way its shape allows, and one whose
    dims repeat (batch 2 and 2 heads) is not compared: its shape fits two readings."""
    from infer.compare._layers.layout_reading import only_fitting_layout

    golden = np.arange(2 * 6 * 8, dtype=np.float32).reshape(2, 6, 8)
    lost = Layout(None, "BatchMatMulV2 m:0 reads t:0, which TF's own transposes hold as ...", shape_decides=True)
    aligned, said = aligned_to_golden(golden, golden.copy(), lost)
    assert aligned is not None and np.array_equal(aligned, golden)
    assert said.startswith("as TensorFlow, the one layout its shape fits (not tracked: BatchMatMulV2 m:0")
    held = np.transpose(golden, (0, 2, 1))  # (2, 8, 6): still one reading only
    aligned, said = aligned_to_golden(golden, held, lost)
    assert aligned is not None and np.array_equal(aligned, golden) and "axes in order [0, 2, 1]" in said
    square = np.zeros((2, 2, 6, 4), dtype=np.float32)
    aligned, said = aligned_to_golden(square, square.copy(), lost)
    assert aligned is None and said.endswith("its shape fits more than one reading, or none")
    # The converter's own moves lost (a Reshape regrouping an NCHW tensor) never let the shape decide.
    regrouped = Layout(None, "Reshape r reads nchw held as NCHW (the converter's)")
    assert aligned_to_golden(golden, golden.copy(), regrouped)[0] is None
    assert only_fitting_layout((2, 1, 5), (2, 5, 1)) == (0, 2, 1)
    assert only_fitting_layout((2, 5), (2, 5, 1)) is None
