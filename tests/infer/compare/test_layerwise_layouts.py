"""--layerwise reads each tensor in the layout the conversion gives it: a grayscale (1-channel) CNN, whose input
transpose tf2onnx writes as a Reshape, matches tensor for tensor like the same CNN on 3 channels; where H = W = C
the tracked layout reads the tensor, so a healthy fp32 conversion gets no false mark and a real damage is still
found; where an op leaves a layout unknown, each tensor after it says so; TF's own transposes are counted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from infer.compare._compare import CompareOptions, CompareResult, compare
from infer.compare._layers.onnx_graph import OnnxGraph
from infer.compare.layer_result import LayerwiseResult
from infer.contract import ModelContract
from infer.run import run_model
from infer.run.options import RunOptions
from tests.builders.bins import write_bins
from tests.builders.frozen import write_frozen
from tests.infer.compare.corpus import edited_copy

pytestmark = pytest.mark.slow

_SIDE = 10  # a 3x3 VALID conv makes it 8x8, with 8 channels: H = W = C


def mini_xception(channels: int) -> Any:
    """The Keras mini-Xception's shape (fer's emotion model), small: conv + batch norm + relu, a residual block of
    two separable convs with batch norm and a strided max pool beside a strided 1x1 conv, then a conv to the
    classes, global mean and softmax. The same weights for any `channels` but the first conv's."""
    def build(tf: Any) -> None:
        tf1 = tf.compat.v1
        rng = np.random.default_rng(7)

        def const(*shape: int, scale: float = 0.3) -> Any:
            return tf.constant(rng.normal(scale=scale, size=shape).astype(np.float32))

        def batch_norm(h: Any, name: str) -> Any:
            scale = tf.constant(rng.uniform(0.5, 1.5, 8).astype(np.float32))
            variance = tf.constant(rng.uniform(0.5, 1.5, 8).astype(np.float32))
            return tf1.nn.fused_batch_norm(h, scale, const(8, scale=0.1), const(8, scale=0.1), variance,
                                           is_training=False, name=name)[0]

        stem_kernel = const(3, 3, 3, 8)
        x = tf1.placeholder(tf.float32, [2, _SIDE, _SIDE, channels], name="images")
        h = tf.nn.conv2d(x, stem_kernel[:, :, :channels, :], 1, "VALID", name="stem/conv")
        h = tf.nn.relu(batch_norm(h, "stem/bn"), name="stem/relu")
        residual = batch_norm(tf.nn.conv2d(h, const(1, 1, 8, 8), 2, "SAME", name="block/shortcut"), "block/bn0")
        h = tf.nn.separable_conv2d(h, const(3, 3, 8, 1), const(1, 1, 8, 8), [1, 1, 1, 1], "SAME",
                                   name="block/sep1")
        h = tf.nn.relu(batch_norm(h, "block/bn1"), name="block/relu1")
        h = tf.nn.separable_conv2d(h, const(3, 3, 8, 1), const(1, 1, 8, 8), [1, 1, 1, 1], "SAME",
                                   name="block/sep2")
        h = tf.nn.max_pool2d(batch_norm(h, "block/bn2"), 3, 2, "SAME", name="block/pool")
        h = tf.add(h, residual, name="block/add")
        h = tf.nn.conv2d(h, const(3, 3, 8, 4), 1, "SAME", name="head/conv")
        tf.nn.softmax(tf.reduce_mean(h, axis=[1, 2], name="head/gap"), name="probs")
    return build


def _converted(folder: Path, channels: int) -> tuple[ModelContract, Path]:
    from infer.convert._convert import ConvertOptions, convert_model

    frozen = write_frozen(folder / "model", mini_xception(channels), ("images:0",), ("probs:0",))
    contract = convert_model(frozen, ConvertOptions(target="onnx", precision_mode="force_fp32",
                                                    soc_version="Ascend910B2")).contract
    return contract, write_bins(folder / "bins", "images:0", (2, _SIDE, _SIDE, channels))


def _layerwise(contract: ModelContract, bins: Path, out: Path) -> tuple[CompareResult, LayerwiseResult]:
    actual = run_model(contract.path, bins, out, RunOptions(backend="onnxrt")).folder
    result = compare(contract.path, bins, actual, options=CompareOptions(layerwise=True),
                     cache_root=out / "golden-cache")
    assert result.layerwise is not None
    return result, result.layerwise


@pytest.fixture(scope="module")
def grayscale(tmp_path_factory: pytest.TempPathFactory) -> tuple[ModelContract, Path]:
    return _converted(tmp_path_factory.mktemp("gray"), 1)


def _producer(model: Any, tensor: str) -> Any:
    return next(node for node in model.graph.node if tensor in node.output)


def test_a_grayscale_cnn_matches_tensor_for_tensor_like_the_3_channel_one(grayscale: tuple[ModelContract, Path],
                                                                          tmp_path: Path) -> None:
    import onnx

    gray_contract, gray_bins = grayscale
    assert gray_contract.converted_path is not None
    gray_ops = [node.op_type for node in onnx.load(str(gray_contract.converted_path)).graph.node]
    assert "Reshape" in gray_ops[:4] and "Transpose" not in gray_ops[:4]  # tf2onnx's input transpose, as a Reshape
    color_contract, color_bins = _converted(tmp_path / "color", 3)
    gray, gray_rows = _layerwise(gray_contract, gray_bins, tmp_path / "gray_out")
    color, color_rows = _layerwise(color_contract, color_bins, tmp_path / "color_out")
    assert gray.passed and color.passed

    def view(rows: LayerwiseResult) -> list[tuple[str, bool, str]]:
        return [(row.tensor, row.matched, row.layout) for row in rows.rows]

    assert view(gray_rows) == view(color_rows)
    matched = {row.tensor: row for row in gray_rows.matched}
    assert len(matched) >= 12 and "block/add:0" in matched
    assert matched["stem/relu:0"].layout == matched["block/sep1:0"].layout == "NCHW (the converter's)"
    assert all(not row.failures for row in gray_rows.matched)
    assert gray_rows.diverges_at is None and gray_rows.note == ""
    for row in gray_rows.rows:  # an unmatched row names no layout it was read in
        assert not (row.unmatched_reason and "as TensorFlow" in row.unmatched_reason), row.unmatched_reason


def test_where_h_w_c_are_equal_a_real_damage_is_still_found_where_it_enters(grayscale: tuple[ModelContract, Path],
                                                                            tmp_path: Path) -> None:
    """(2,8,8,8) fits NHWC and NCHW; the tracked layout reads it, so the damaged depthwise conv is first."""
    from onnx import numpy_helper

    converted, bins = grayscale

    def damage(model: Any) -> None:
        computing = OnnxGraph(model).computing_node("block/sep1/depthwise:0")  # through the fp16 emulation's casts
        assert computing is not None and computing.op_type == "Conv"
        node = next(node for node in model.graph.node if node.name == computing.name)
        for index, tensor in enumerate(model.graph.initializer):
            if tensor.name == node.input[1]:
                values = numpy_helper.to_array(tensor)
                model.graph.initializer[index].CopyFrom(numpy_helper.from_array(-values, tensor.name))
                return
        raise AssertionError(node.input[1])

    contract = edited_copy(converted, tmp_path / "damaged", damage)
    _, layers = _layerwise(contract, bins, tmp_path / "out")
    first = layers.diverges_at
    assert first is not None and first.tensor == "block/sep1/depthwise:0", [r.tensor for r in layers.rows
                                                                            if r.failures]
    assert first.shape == (2, 8, 8, 8) and first.layout == "NCHW (the converter's)"
    compared = {row.tensor: row for row in layers.matched}
    assert not compared["stem/relu:0"].failures and not compared["block/bn0:0"].failures  # upstream, the shortcut


def test_an_op_that_hides_the_layout_makes_each_tensor_after_it_say_so(grayscale: tuple[ModelContract, Path],
                                                                      tmp_path: Path) -> None:
    """A Flatten and a Reshape back after stem/relu: the values are the same, the NCHW axes regrouped on the way."""
    from onnx import helper, numpy_helper

    converted, bins = grayscale

    def regroup(model: Any) -> None:
        relu = _producer(model, "stem/relu:0")
        for node in model.graph.node:
            node.input[:] = ["restored" if name == "stem/relu:0" else name for name in node.input]
        at = list(model.graph.node).index(relu) + 1
        model.graph.initializer.append(numpy_helper.from_array(np.array([2, 8, 8, 8], dtype=np.int64), "nchw"))
        model.graph.node.insert(at, helper.make_node("Reshape", ["flat", "nchw"], ["restored"], name="unflatten"))
        model.graph.node.insert(at, helper.make_node("Flatten", ["stem/relu:0"], ["flat"], name="flatten"))

    contract = edited_copy(converted, tmp_path / "regrouped", regroup)
    result, layers = _layerwise(contract, bins, tmp_path / "out")
    assert result.passed and layers.diverges_at is None
    rows = {row.tensor: row for row in layers.rows}
    assert rows["stem/relu:0"].matched and rows["stem/relu:0"].layout == "NCHW (the converter's)"
    reason = ("layout unknown: Flatten flatten reads stem/relu:0 held as NCHW (the converter's): how its output's "
              "axes lie is not tracked through it")
    after = ("block/sep1/depthwise:0", "block/sep1:0", "block/relu1:0", "block/add:0", "head/gap:0")
    assert [rows[name].unmatched_reason for name in after] == [reason] * len(after)
    assert rows["probs:0"].matched and rows["probs:0"].layout == "as the model gives it"


def build_own_transposes(tf: Any) -> None:
    """TF's own transposes: H and W swapped after a conv (H = W, so the shapes cannot tell), then the model turns
    its tensor NCHW itself. tf2onnx pushes the swap through the relu and merges it into its own transposes."""
    rng = np.random.default_rng(9)

    def const(*shape: int) -> Any:
        return tf.constant(rng.normal(scale=0.4, size=shape).astype(np.float32))

    x = tf.compat.v1.placeholder(tf.float32, [2, 6, 6, 3], name="images")
    h = tf.nn.relu(tf.nn.conv2d(x, const(3, 3, 3, 4), 1, "SAME"), name="relu")
    h = tf.nn.relu(tf.transpose(h, [0, 2, 1, 3], name="swap"), name="swapped")
    h = tf.nn.conv2d(h, const(3, 3, 4, 6), 1, "SAME", name="conv2")
    h = tf.nn.relu(tf.transpose(h, [0, 3, 1, 2], name="to_nchw"), name="nchw")
    tf.reduce_sum(h, axis=[2, 3], name="out")


def test_tfs_own_transposes_are_counted(tmp_path: Path) -> None:
    from infer.convert._convert import ConvertOptions, convert_model

    frozen = write_frozen(tmp_path / "model", build_own_transposes, ("images:0",), ("out:0",))
    contract = convert_model(frozen, ConvertOptions(target="onnx", precision_mode="force_fp32",
                                                    soc_version="Ascend910B2")).contract
    result, layers = _layerwise(contract, write_bins(tmp_path / "bins", "images:0", (2, 6, 6, 3)), tmp_path / "out")
    assert result.passed and layers.diverges_at is None
    rows = {row.tensor: row for row in layers.rows}
    for name in ("relu:0", "swapped:0", "conv2:0", "nchw:0"):
        assert rows[name].matched and not rows[name].failures, (name, rows[name].unmatched_reason)
    assert rows["relu:0"].layout == rows["conv2:0"].layout == "NCHW (the converter's)"
    assert rows["swapped:0"].layout == "TensorFlow's axes in order [0, 3, 2, 1]"  # NCHW of swapped H and W
    assert rows["nchw:0"].layout == "as TensorFlow"  # the model's own NCHW is the converter's
    assert rows["out:0"].layout == "as TensorFlow"  # its sum over the model's own H, W: (N, C) on both sides


def save_keras_mini_xception(path: Path) -> None:
    """The Keras mini-Xception's architecture (the fer package's emotion model: 64x64x1 -> 7 classes), random
    weights and batch-norm statistics, saved as a .keras file."""
    import keras
    from keras import layers

    keras.utils.set_random_seed(0)
    inputs = keras.Input((64, 64, 1), name="input_1")
    x = inputs
    for _ in range(2):
        x = layers.Activation("relu")(layers.BatchNormalization()(layers.Conv2D(8, 3, use_bias=False)(x)))
    for filters in (16, 32, 64, 128):
        residual = layers.BatchNormalization()(layers.Conv2D(filters, 1, strides=2, padding="same",
                                                             use_bias=False)(x))
        x = layers.SeparableConv2D(filters, 3, padding="same", use_bias=False)(x)
        x = layers.Activation("relu")(layers.BatchNormalization()(x))
        x = layers.BatchNormalization()(layers.SeparableConv2D(filters, 3, padding="same", use_bias=False)(x))
        x = layers.add([layers.MaxPooling2D(3, strides=2, padding="same")(x), residual])
    x = layers.GlobalAveragePooling2D()(layers.Conv2D(7, 3, padding="same")(x))
    model = keras.Model(inputs, layers.Activation("softmax", name="predictions")(x))
    rng = np.random.default_rng(1)
    for layer in model.layers:
        if isinstance(layer, layers.BatchNormalization):
            shape = layer.get_weights()[0].shape
            layer.set_weights([rng.uniform(0.5, 1.5, shape), rng.normal(0, 0.1, shape), rng.normal(0, 0.1, shape),
                               rng.uniform(0.5, 1.5, shape)])
    model.save(str(path))


def test_the_keras_mini_xception_on_grayscale_is_read_in_its_layouts(tmp_path: Path) -> None:
    """The issue's model: 67 of its 69 tensors were 'shape [8, 8, 62, 62] in ONNX (as TensorFlow), [8, 62, 62, 8]
    in TensorFlow'. Every tensor ONNX holds by name is now compared, and passes."""
    from infer.contract import load_contract
    from infer.convert._convert import ConvertOptions, convert_model
    from infer.freeze import freeze_model
    from infer.freeze.options import FreezeOptions

    save_keras_mini_xception(tmp_path / "mini_xception.keras")
    freeze_model(tmp_path / "mini_xception.keras", tmp_path / "frozen",
                 FreezeOptions(batch=8, outputs=("predictions:0",)))
    frozen = load_contract(tmp_path / "frozen" / "model.json")
    contract = convert_model(frozen, ConvertOptions(target="onnx")).contract
    bins = write_bins(tmp_path / "bins", frozen.inputs[0].name, (8, 64, 64, 1), files=1)
    result, layers = _layerwise(contract, bins, tmp_path / "out")
    assert result.passed and layers.diverges_at is None
    shapes = {row.shape for row in layers.matched}
    assert (8, 62, 62, 8) in shapes and len(layers.matched) >= 20
    assert all(not row.failures for row in layers.matched)
    unmatched = {row.unmatched_reason for row in layers.rows if not row.matched}
    assert unmatched <= {"not in the ONNX model (fused or renamed by the converter)"}, unmatched
