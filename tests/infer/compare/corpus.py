"""A corpus of converted models with one layer damaged in the converted (ONNX) model, for judging diagnoses.

Two tiny frozen graphs (a CNN with conv, bias, batch norm, depthwise conv, relu6, dense and softmax; an MLP with
two dense layers and tanh) are converted once each per precision mode; every case then copies one conversion and
damages one layer of the ONNX model only: weights scaled, noised or sign-flipped (small and large damage), or an
activation replaced by another op. model.pb stays the original, so TensorFlow is the golden side and the damaged
layer is where the converted model leaves it. Each case names the TensorFlow tensors a diagnosis may point at: the
damaged layer's own tensors and, where the converter fused them into the next op, that op's output.

`build_corpus` writes every case under one folder; `tests/infer/compare/test_corpus.py` builds it once per session.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, cast

import numpy as np

from atc_wrap.precision.modes import PrecisionMode
from binio.binfile import sha256_file
from infer.contract import ModelContract, load_contract
from tests.builders.bins import write_bins

# An edit of the ONNX model in place; `rng` makes noise reproducible.
Damage = Callable[[Any, np.random.Generator], None]


@dataclass(frozen=True)
class CorpusCase:
    """One damaged model: what was damaged, how much, and which tensors name the damaged layer."""

    name: str
    base: str  # "cnn" or "mlp"
    precision_mode: str
    layer: str  # what kind of layer: conv, depthwise conv, dense, bias, batch-norm scale, activation
    severity: str  # small | large
    expected_first: tuple[str, ...]  # TF tensors that count as naming the damaged layer (or its immediate output)
    damage: Damage


@dataclass(frozen=True)
class BuiltCase:
    case: CorpusCase
    contract: ModelContract  # model.json: the original pb, the damaged ONNX model
    bins: Path  # the base model's dataset


def build_cnn(tf: Any) -> None:
    """images (2,8,8,3) -> conv 3x3x3x8 + bias -> relu -> batch norm -> depthwise 3x3 + bias -> relu6 -> mean over
    H, W -> dense 8x6 + bias -> softmax. Constants only: the graph is already frozen."""
    tf1 = tf.compat.v1
    rng = np.random.default_rng(0)

    def const(*shape: int, scale: float = 0.3) -> Any:
        return tf.constant(rng.normal(scale=scale, size=shape).astype(np.float32))

    x = tf1.placeholder(tf.float32, [2, 8, 8, 3], name="images")
    h = tf.nn.conv2d(x, const(3, 3, 3, 8), 1, "SAME", name="conv1/conv")
    h = tf.nn.bias_add(h, const(8, scale=0.1), name="conv1/bias")
    h = tf.nn.relu(h, name="conv1/relu")
    scale = tf.constant(rng.uniform(0.5, 1.5, 8).astype(np.float32))
    variance = tf.constant(rng.uniform(0.5, 1.5, 8).astype(np.float32))
    h, _, _ = tf1.nn.fused_batch_norm(h, scale, const(8, scale=0.1), const(8, scale=0.1), variance,
                                      is_training=False, name="bn")
    h = tf.nn.depthwise_conv2d(h, const(3, 3, 8, 1), [1, 1, 1, 1], "SAME", name="dw/conv")
    h = tf.nn.bias_add(h, const(8, scale=0.1), name="dw/bias")
    h = tf.nn.relu6(h, name="dw/relu6")
    h = tf.reduce_mean(h, axis=[1, 2], name="pool")
    h = tf.matmul(h, const(8, 6, scale=0.8), name="fc/matmul")
    h = tf.nn.bias_add(h, const(6, scale=0.1), name="fc/bias")
    tf.nn.softmax(h, name="probs")


def build_mlp(tf: Any) -> None:
    """features (2,16) -> dense 16x32 + bias -> tanh -> dense 32x10 + bias -> sigmoid."""
    tf1 = tf.compat.v1
    rng = np.random.default_rng(1)

    def const(*shape: int, scale: float = 0.3) -> Any:
        return tf.constant(rng.normal(scale=scale, size=shape).astype(np.float32))

    x = tf1.placeholder(tf.float32, [2, 16], name="features")
    h = tf.nn.bias_add(tf.matmul(x, const(16, 32), name="dense1/matmul"), const(32, scale=0.1), name="dense1/bias")
    h = tf.tanh(h, name="dense1/tanh")
    h = tf.nn.bias_add(tf.matmul(h, const(32, 10), name="dense2/matmul"), const(10, scale=0.1), name="dense2/bias")
    tf.sigmoid(h, name="scores")


_BASES: dict[str, tuple[Callable[[Any], None], str, tuple[int, ...], str]] = {
    # name -> (builder, input tensor, input shape, output tensor)
    "cnn": (build_cnn, "images:0", (2, 8, 8, 3), "probs:0"),
    "mlp": (build_mlp, "features:0", (2, 16), "scores:0"),
}


# ---- Finding the layer to damage in the converted graph, by what the node computes. ----

def _node(model: Any, op_type: str, *, nth: int = 0, where: Callable[[Any], bool] = lambda node: True) -> Any:
    found = [n for n in model.graph.node if n.op_type == op_type and where(n)]
    return found[nth]


def _grouped(node: Any) -> bool:
    return any(a.name == "group" and a.i > 1 for a in node.attribute)


def _edit_initializer(model: Any, name: str, change: Callable[[np.ndarray], np.ndarray]) -> None:
    from onnx import numpy_helper

    for index, tensor in enumerate(model.graph.initializer):
        if tensor.name == name:
            values = numpy_helper.to_array(tensor)
            model.graph.initializer[index].CopyFrom(numpy_helper.from_array(
                change(values.copy()).astype(values.dtype), name))
            return
    raise KeyError(name)


def _weights(op_type: str, position: int, change: Callable[[np.ndarray, np.random.Generator], np.ndarray], *,
             nth: int = 0, grouped: bool | None = None) -> Damage:
    def damage(model: Any, rng: np.random.Generator) -> None:
        node = _node(model, op_type, nth=nth, where=lambda n: grouped is None or _grouped(n) == grouped)
        _edit_initializer(model, node.input[position], lambda values: change(values, rng))
    return damage


def _noise(fraction: float) -> Callable[[np.ndarray, np.random.Generator], np.ndarray]:
    """Each weight moved by `fraction` of the layer's own spread: damage a few percent of the output's size."""
    return lambda values, rng: values + rng.normal(scale=fraction * float(np.std(values)), size=values.shape)


def _scaled(factor: float) -> Callable[[np.ndarray, np.random.Generator], np.ndarray]:
    return lambda values, rng: values * factor


def _flipped(values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return -values + rng.normal(scale=float(np.std(values)), size=values.shape)


def _shifted(amount: float) -> Callable[[np.ndarray, np.random.Generator], np.ndarray]:
    """Each bias moved by about `amount`, each by its own amount (a softmax does not see one shift of all)."""
    return lambda values, rng: values + amount * rng.normal(size=values.shape)


def _replace_op(op_type: str, new_type: str, **attributes: float) -> Damage:
    def damage(model: Any, rng: np.random.Generator) -> None:
        from onnx import helper

        node = _node(model, op_type)
        node.op_type = new_type
        del node.attribute[:]
        node.attribute.extend(helper.make_attribute(key, value) for key, value in attributes.items())
    return damage


_CONV1 = ("conv1/conv:0", "conv1/bias:0")
_DW = ("dw/conv:0", "dw/bias:0")
_FC = ("fc/matmul:0", "fc/bias:0")
_DENSE1 = ("dense1/matmul:0", "dense1/bias:0")
_DENSE2 = ("dense2/matmul:0", "dense2/bias:0")

CASES: tuple[CorpusCase, ...] = (
    CorpusCase("conv-kernel-large", "cnn", "force_fp32", "conv", "large", _CONV1,
               _weights("Conv", 1, _flipped, grouped=False)),
    CorpusCase("conv-kernel-small", "cnn", "force_fp32", "conv", "small", _CONV1,
               _weights("Conv", 1, _noise(0.15), grouped=False)),
    CorpusCase("conv-kernel-small-fp16", "cnn", "force_fp16", "conv", "small", _CONV1,
               _weights("Conv", 1, _scaled(1.12), grouped=False)),
    CorpusCase("conv-bias-large", "cnn", "force_fp32", "bias", "large", _CONV1,
               _weights("Conv", 2, _shifted(1.0), grouped=False)),
    CorpusCase("conv-bias-small", "cnn", "force_fp16", "bias", "small", _CONV1,
               _weights("Conv", 2, _shifted(0.2), grouped=False)),
    CorpusCase("bn-scale-large", "cnn", "force_fp32", "batch-norm scale", "large", ("bn:0",),
               _weights("BatchNormalization", 1, _flipped)),
    CorpusCase("bn-scale-small", "cnn", "force_fp16", "batch-norm scale", "small", ("bn:0",),
               _weights("BatchNormalization", 1, _scaled(1.1))),
    CorpusCase("depthwise-kernel-large", "cnn", "force_fp32", "depthwise conv", "large", _DW,
               _weights("Conv", 1, _flipped, grouped=True)),
    CorpusCase("depthwise-kernel-small", "cnn", "force_fp16", "depthwise conv", "small", _DW,
               _weights("Conv", 1, _noise(0.15), grouped=True)),
    CorpusCase("depthwise-bias-large", "cnn", "force_fp32", "bias", "large", _DW,
               _weights("Conv", 2, _shifted(2.0), grouped=True)),
    CorpusCase("dense-kernel-large", "cnn", "force_fp16", "dense", "large", _FC, _weights("Gemm", 1, _flipped)),
    CorpusCase("dense-kernel-small", "cnn", "force_fp32", "dense", "small", _FC, _weights("Gemm", 1, _noise(0.1))),
    CorpusCase("dense-bias-small", "cnn", "force_fp32", "bias", "small", _FC, _weights("Gemm", 2, _shifted(0.3))),
    CorpusCase("relu-to-sigmoid", "cnn", "force_fp32", "activation", "large", ("conv1/relu:0",),
               _replace_op("Relu", "Sigmoid")),
    CorpusCase("relu-to-leaky", "cnn", "force_fp16", "activation", "small", ("conv1/relu:0",),
               _replace_op("Relu", "LeakyRelu", alpha=0.2)),
    CorpusCase("mlp-dense1-small", "mlp", "force_fp32", "dense", "small", _DENSE1,
               _weights("Gemm", 1, _noise(0.1), nth=0)),
    CorpusCase("mlp-dense2-bias-large", "mlp", "force_fp16", "bias", "large", _DENSE2,
               _weights("Gemm", 2, _shifted(1.5), nth=1)),
    CorpusCase("mlp-tanh-to-sigmoid", "mlp", "force_fp32", "activation", "large", ("dense1/tanh:0",),
               _replace_op("Tanh", "Sigmoid")),
)


def _round_weights_to_fp16(model: Any) -> None:
    """A damaged fp16-emulated model keeps fp16 weights, as the emulation left them."""
    from onnx import numpy_helper

    for index, tensor in enumerate(model.graph.initializer):
        if tensor.data_type == 1:
            values = numpy_helper.to_array(tensor)
            rounded = values.astype(np.float16).astype(np.float32)
            model.graph.initializer[index].CopyFrom(numpy_helper.from_array(rounded, tensor.name))


def edited_copy(converted: ModelContract, folder: Path, edit: Callable[[Any], None]) -> ModelContract:
    """A copy of a converted model's folder whose ONNX model `edit` changed in place; its contract records the new
    ONNX sha256 so that compare accepts it."""
    import onnx

    shutil.copytree(converted.folder, folder)
    contract = load_contract(folder / converted.path.name)
    path = contract.converted_path
    assert path is not None and contract.converted is not None
    model = onnx.load(str(path))
    edit(model)
    path.write_bytes(model.SerializeToString())
    return replace(contract, converted=replace(contract.converted, sha256=sha256_file(path))).save()


def damaged_copy(converted: ModelContract, folder: Path, case: CorpusCase, *, seed: int = 0) -> ModelContract:
    """A copy of a converted model's folder whose ONNX model has `case`'s damage."""
    def edit(model: Any) -> None:
        case.damage(model, np.random.default_rng(seed))
        if case.precision_mode in ("force_fp16", "allow_fp32_to_fp16"):
            _round_weights_to_fp16(model)

    return edited_copy(converted, folder, edit)


def base_model(root: Path, base: str) -> tuple[ModelContract, Path]:
    """A base model frozen under root/base/frozen, and its dataset under root/base/bins."""
    from tests.builders.frozen import write_frozen

    builder, tensor, shape, output = _BASES[base]
    return (write_frozen(root / base / "frozen", builder, (tensor,), (output,)),
            write_bins(root / base / "bins", tensor, shape))


def converted_copy(frozen: ModelContract, folder: Path, precision_mode: str) -> ModelContract:
    """A copy of a frozen model's folder, converted to the ONNX stand-in under `precision_mode`."""
    from infer.convert._convert import ConvertOptions, convert_model

    shutil.copytree(frozen.folder, folder)
    return convert_model(load_contract(folder / "model.json"), ConvertOptions(
        target="onnx", precision_mode=cast(PrecisionMode, precision_mode))).contract


def build_corpus(root: Path, cases: tuple[CorpusCase, ...] = CASES) -> tuple[BuiltCase, ...]:
    """Every case under `root`: each base model frozen, converted once per precision mode, then damaged."""
    bases: dict[str, tuple[ModelContract, Path]] = {}
    converted: dict[tuple[str, str], ModelContract] = {}
    built = []
    for case in cases:
        if case.base not in bases:
            bases[case.base] = base_model(root, case.base)
        frozen, bins = bases[case.base]
        key = (case.base, case.precision_mode)
        if key not in converted:
            converted[key] = converted_copy(frozen, root / case.base / case.precision_mode, case.precision_mode)
        contract = damaged_copy(converted[key], root / "cases" / case.name, case)
        built.append(BuiltCase(case=case, contract=contract, bins=bins))
    return tuple(built)
