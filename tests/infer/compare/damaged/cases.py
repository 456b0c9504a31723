"""The corpus's cases, and building each one's damaged conversion.

A case is (name, family, precision mode, damage, expected layer): the damage is applied to the family's model
converted under that mode, and `expected` holds the TensorFlow tensors that name the damaged layer, the first the
layer's own output and the rest the tensors tf2onnx computed in the same ONNX node (a Conv's BiasAdd and the batch
norm folded into it; a Gemm's MatMul and BiasAdd), any of which the mark may name. `subtle` says the damage was
chosen to stay below msit's per-tensor limits at that layer (cosine 0.99, RED 0.05), and only those do: the test
measures each damage at its layer (`layer_error.py`) and holds the flag to it.

`Corpus(root)` freezes each family once, converts it once per precision mode and builds a case as a copy of that
conversion with its ONNX model damaged: `corpus.build(case)` returns the damaged model's contract (model.json
beside the damaged ONNX model and the original pb, so TensorFlow stays the golden side) and the family's dataset.
`corpus.healthy(family, mode)` returns the undamaged conversion, the control; `ROUNDED_OTHERWISE` are controls
too, healthy models whose fp16 weights are one step off ATC's rounding."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np

from atc_wrap.precision.modes import PrecisionMode
from infer.contract import ModelContract, load_contract
from tests.infer.compare.corpus import edited_copy
from tests.infer.compare.damaged import damages as d
from tests.infer.compare.damaged.families import FAMILIES, frozen_family

FP32, FP16 = "force_fp32", "force_fp16"
PRECISION_MODES = (FP32, FP16)


@dataclass(frozen=True)
class CorpusCase:
    name: str
    family: str
    precision_mode: str
    damage: d.Damage
    expected: tuple[str, ...]  # the damaged layer's output first, then tensors fused with it (a control: none)
    subtle: bool = False  # chosen to stay below msit's per-tensor limits at the damaged layer

    @property
    def expected_layer(self) -> str:
        return self.expected[0] if self.expected else ""


def _conv(scope: str, *, bn: bool = False) -> tuple[str, ...]:
    return ((f"{scope}/bn:0", f"{scope}/bias:0", f"{scope}/conv:0") if bn else (f"{scope}/bias:0", f"{scope}/conv:0"))


def _dense(scope: str) -> tuple[str, ...]:
    return (f"{scope}/bias:0", f"{scope}/matmul:0")


def _separable(scope: str) -> tuple[str, ...]:
    return (f"{scope}/bn:0", f"{scope}:0")


CASES: tuple[CorpusCase, ...] = (
    # A plain CNN.
    CorpusCase("cnn-conv1-weight-x1.04", "cnn", FP32, d.scaled_weight("conv1/bias", 1.04), _conv("conv1"), True),
    CorpusCase("cnn-conv2-weight-noise-3%", "cnn", FP16, d.noisy_weight("conv2/bias", 0.03), _conv("conv2"), True),
    CorpusCase("cnn-conv2-bias-zeroed", "cnn", FP32, d.zeroed_bias("conv2/bias"), _conv("conv2")),
    CorpusCase("cnn-conv3-channels-swapped", "cnn", FP16, d.swapped_channels("conv3/bias", 2, 5), _conv("conv3")),
    CorpusCase("cnn-conv3-channel-sign", "cnn", FP32, d.flipped_channel("conv3/bias", 0), _conv("conv3")),
    CorpusCase("cnn-conv1-relu-to-leaky", "cnn", FP32, d.replaced_op("conv1/relu", "LeakyRelu", alpha=0.01),
               ("conv1/relu:0",), True),
    CorpusCase("cnn-fc-weight-x1.05", "cnn", FP16, d.scaled_weight("fc/matmul", 1.05), _dense("fc"), True),
    CorpusCase("cnn-fc-bias-zeroed", "cnn", FP32, d.zeroed_bias("fc/matmul"), _dense("fc")),
    # A residual net with batch norm (folded into each Conv by tf2onnx).
    CorpusCase("resnet-stem-bn-epsilon", "resnet", FP32, d.batch_norm_epsilon("stem/bn", 0.1),
               _conv("stem", bn=True), True),
    CorpusCase("resnet-block1a-weight-noise-4%", "resnet", FP32, d.noisy_weight("block1/a/bn", 0.04),
               _conv("block1/a", bn=True), True),
    CorpusCase("resnet-block1b-channels-swapped", "resnet", FP32, d.swapped_channels("block1/b/bn", 0, 3),
               _conv("block1/b", bn=True)),
    CorpusCase("resnet-block2a-bn-mean", "resnet", FP16, d.batch_norm_mean("block2/a/bn", 0.08),
               _conv("block2/a", bn=True), True),
    CorpusCase("resnet-block2-residual-dropped", "resnet", FP32, d.dropped_input("block2/add", 1),
               ("block2/add:0",)),
    CorpusCase("resnet-block3a-relu-to-leaky", "resnet", FP16, d.replaced_op("block3/a/relu", "LeakyRelu", alpha=0.1),
               ("block3/a/relu:0",)),
    CorpusCase("resnet-block3b-weight-x1.03", "resnet", FP16, d.scaled_weight("block3/b/bn", 1.03),
               _conv("block3/b", bn=True), True),
    CorpusCase("resnet-block4a-bias-zeroed", "resnet", FP16, d.zeroed_bias("block4/a/bn"), _conv("block4/a", bn=True),
               True),
    CorpusCase("resnet-block4b-bn-epsilon", "resnet", FP16, d.batch_norm_epsilon("block4/b/bn", 0.05),
               _conv("block4/b", bn=True), True),
    # A depthwise-separable net (MobileNet-style).
    CorpusCase("mobilenet-stem-bias-zeroed", "mobilenet", FP16, d.zeroed_bias("stem/bias"), _conv("stem")),
    CorpusCase("mobilenet-sep1dw-weight-noise-3%", "mobilenet", FP16, d.noisy_weight("sep1/dw/bn", 0.03),
               _separable("sep1/dw"), True),
    CorpusCase("mobilenet-sep1pw-weight-x1.04", "mobilenet", FP32, d.scaled_weight("sep1/pw/bn", 1.04),
               _separable("sep1/pw"), True),
    CorpusCase("mobilenet-sep1dw-relu6-to-leaky", "mobilenet", FP32,
               d.replaced_op("sep1/dw/relu6", "LeakyRelu", alpha=0.05),
               ("sep1/dw/relu6:0",)),
    CorpusCase("mobilenet-sep2dw-bn-epsilon", "mobilenet", FP32, d.batch_norm_epsilon("sep2/dw/bn", 0.05),
               _separable("sep2/dw"), True),
    CorpusCase("mobilenet-sep2dw-channel-sign", "mobilenet", FP32, d.flipped_channel("sep2/dw/bn", 4),
               _separable("sep2/dw")),
    CorpusCase("mobilenet-sep2pw-bn-mean", "mobilenet", FP16, d.batch_norm_mean("sep2/pw/bn", 0.3),
               _separable("sep2/pw")),
    CorpusCase("mobilenet-fc-weight-noise-3%", "mobilenet", FP16, d.noisy_weight("fc/matmul", 0.03), _dense("fc"),
               True),
    # A dense net with layer norm, tanh and softmax.
    # (Noise, not a scale: the layer norm after it undoes a scale.)
    CorpusCase("mlp-dense1-weight-noise-3%", "mlp", FP32, d.noisy_weight("dense1/matmul", 0.03), _dense("dense1"),
               True),
    CorpusCase("mlp-ln1-epsilon", "mlp", FP32, d.scaled_constant("ln1/eps", 1, 5e3), ("ln1/eps:0",), True),
    CorpusCase("mlp-ln1-beta-zeroed", "mlp", FP16, d.zeroed_constant("ln1/beta", 1), ("ln1/beta:0",)),
    CorpusCase("mlp-dense2-weight-noise-4%", "mlp", FP16, d.noisy_weight("dense2/matmul", 0.04), _dense("dense2"),
               True),
    CorpusCase("mlp-dense2-bias-zeroed", "mlp", FP32, d.zeroed_bias("dense2/matmul"), _dense("dense2")),
    CorpusCase("mlp-tanh-to-sigmoid", "mlp", FP16, d.replaced_op("dense2/tanh", "Sigmoid"), ("dense2/tanh:0",)),
    CorpusCase("mlp-dense3-channels-swapped", "mlp", FP32, d.swapped_channels("dense3/matmul", 1, 7),
               _dense("dense3")),
    # A self-attention block.
    CorpusCase("attention-query-weight-x1.04", "attention", FP32, d.scaled_weight("attn/query/matmul", 1.04),
               _dense("attn/query"), True),
    CorpusCase("attention-value-weight-noise-3%", "attention", FP16, d.noisy_weight("attn/value/matmul", 0.03),
               _dense("attn/value"), True),
    # (Not the key's bias: q.b_k is one shift of each query's scores, which the softmax removes.)
    CorpusCase("attention-query-bias-zeroed", "attention", FP32, d.zeroed_bias("attn/query/matmul"),
               _dense("attn/query")),
    CorpusCase("attention-scores-scale-x1.2", "attention", FP16, d.scaled_constant("attn/scores", 1, 1.2),
               ("attn/scores:0",)),
    CorpusCase("attention-softmax-axis", "attention", FP32, d.changed_attribute("attn/softmax", "axis", 1),
               ("attn/softmax:0",)),
    CorpusCase("attention-out-bias-zeroed", "attention", FP16, d.zeroed_bias("attn/out/matmul"), _dense("attn/out")),
    CorpusCase("attention-residual-dropped", "attention", FP32, d.dropped_input("attn/residual", 1),
               ("attn/residual:0",)),
    CorpusCase("attention-fc-weight-x1.03", "attention", FP16, d.scaled_weight("fc/matmul", 1.03), _dense("fc"), True),
)

# Controls, not damage: every family in each mode with its fp16 weights moved by at most one step, as a device that
# rounds otherwise would store them. Nothing should be marked; `expected` is empty.
ROUNDED_OTHERWISE: tuple[CorpusCase, ...] = tuple(
    CorpusCase(f"{family}-rounded-otherwise-{mode}", family, mode, d.fp16_jitter(), ())
    for family in FAMILIES for mode in PRECISION_MODES)


@dataclass(frozen=True)
class BuiltCase:
    contract: ModelContract  # the damaged (or healthy) conversion's model.json
    bins: Path  # the family's dataset


def _fp16_valued(model: Any) -> set[str]:
    """The float initializers whose values are all fp16 values: the ones the emulation stored as ATC would."""
    from onnx import numpy_helper

    names = set()
    for tensor in model.graph.initializer:
        values = numpy_helper.to_array(tensor)
        if values.dtype == np.float32 and np.array_equal(values.astype(np.float16).astype(np.float32), values):
            names.add(tensor.name)
    return names


def _kept_fp16(model: Any, names: set[str]) -> None:
    """A damaged weight the conversion stored in fp16 stays an fp16 value, as ATC would have stored it."""
    from onnx import numpy_helper

    for index, tensor in enumerate(model.graph.initializer):
        if tensor.name in names:
            values = numpy_helper.to_array(tensor).astype(np.float16).astype(np.float32)
            model.graph.initializer[index].CopyFrom(numpy_helper.from_array(values, tensor.name))


@dataclass
class Corpus:
    """Every family frozen once under root/<family>, converted once per mode; each case a damaged copy."""

    root: Path
    _frozen: dict[str, tuple[ModelContract, Path]] = field(default_factory=dict)
    _converted: dict[tuple[str, str], ModelContract] = field(default_factory=dict)

    def frozen(self, family: str) -> tuple[ModelContract, Path]:
        if family not in self._frozen:
            self._frozen[family] = frozen_family(FAMILIES[family], self.root / family)
        return self._frozen[family]

    def first_batch(self, family: str) -> np.ndarray:
        """The family's first batch of inputs, as dump-bin wrote it in its first bin."""
        self.frozen(family)
        batch = FAMILIES[family].input_shape[0]
        return np.load(self.root / family / "source" / "inputs.npy")[:batch]

    def healthy(self, family: str, precision_mode: str) -> BuiltCase:
        """The family converted under `precision_mode` by `infer.convert_model`, undamaged."""
        import infer

        frozen, bins = self.frozen(family)
        key = (family, precision_mode)
        if key not in self._converted:
            folder = self.root / family / precision_mode
            shutil.copytree(frozen.folder, folder)
            self._converted[key] = infer.convert_model(load_contract(folder / frozen.path.name), infer.ConvertOptions(
                target="onnx", precision_mode=cast(PrecisionMode, precision_mode))).contract
        return BuiltCase(self._converted[key], bins)

    def build(self, case: CorpusCase, *, seed: int = 0) -> BuiltCase:
        """A copy of the case's conversion under root/cases/<name>, its ONNX model damaged; its contract records the
        damaged model's sha256, as a conversion that produced it would (the older corpus's `edited_copy`)."""
        import tensorflow as tf

        healthy = self.healthy(case.family, case.precision_mode)
        frozen = d.FrozenGraph(tf.compat.v1.GraphDef.FromString(healthy.contract.pb_path.read_bytes()))

        def edit(model: Any) -> None:
            fp16_valued = _fp16_valued(model)
            case.damage(model, frozen, np.random.default_rng(seed))
            _kept_fp16(model, fp16_valued)

        return BuiltCase(edited_copy(healthy.contract, self.root / "cases" / case.name, edit), healthy.bins)
