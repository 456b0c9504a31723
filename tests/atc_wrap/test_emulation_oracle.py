"""An exact oracle for the fp16 emulation: the small CNN computed in numpy as the README documents it (fp32
arithmetic inside each op, the result rounded to fp16 after every op that computes in fp16, weights and the input
rounded), checked against the ONNX stand-in tensor by tensor, inf and NaN from overflow included.

Where the two may differ, and why: numpy sums a convolution or a matrix product in another order than ONNX
Runtime's kernels (and in float64 here), so a value within an fp32 rounding of the midpoint between two fp16
numbers can round to either: one fp16 ulp, on few elements. Where a convolution's terms cancel (inputs in the
tens of thousands, a result near 0) fp32's own summation error, bounded by 27 terms x fp32 eps x the sum of
|terms|, can exceed an fp16 ulp of the small result: there the bound is what is checked. Tensors kept in fp32
(allow_mix_precision's mean and softmax) differ by the same summation order and exp implementation: a few fp32
ulps. Everything else is bit for bit, and every inf and NaN is in the same place.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from infer.contract import ModelContract

pytestmark = pytest.mark.slow

TENSORS = ("BiasAdd:0", "conv/relu:0", "pool:0", "head/logits:0", "probs:0")


def _f16(values: np.ndarray) -> np.ndarray:
    """Rounded to fp16 and back (the emulation's Cast pair); past 65504 is inf."""
    with np.errstate(over="ignore"):
        return values.astype(np.float32).astype(np.float16).astype(np.float32)


def _weights(contract: ModelContract) -> dict[str, np.ndarray]:
    """The conv kernel, conv bias and dense weights as the frozen pb holds them (the inputs of the ops)."""
    import tensorflow as tf

    from ckpt2pb.protobuf import read_graph_def

    graph_def = read_graph_def(contract.pb_path)
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.import_graph_def(graph_def, name="")
    wanted = {"kernel": ("Conv2D", 1), "bias": ("BiasAdd", 1), "dense": ("head/logits", 1)}
    with tf.compat.v1.Session(graph=graph) as session:
        return {key: session.run(graph.get_operation_by_name(op).inputs[index]) for key, (op, index)
                in wanted.items()}


def _conv_same(x: np.ndarray, kernel: np.ndarray) -> np.ndarray:
    """NHWC, HWIO kernel 3x3, stride 1, SAME padding; summed in float64."""
    padded = np.pad(x.astype(np.float64), ((0, 0), (1, 1), (1, 1), (0, 0)))
    height, width = x.shape[1:3]
    out = np.zeros((x.shape[0], height, width, kernel.shape[3]))
    for i in range(3):
        for j in range(3):
            out += np.einsum("nhwc,co->nhwo", padded[:, i:i + height, j:j + width, :], kernel[i, j].astype(np.float64))
    return out


def _softmax(logits: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        shifted = logits.astype(np.float64) - logits.max(axis=1, keepdims=True)
        exp = np.exp(shifted)
        return exp / exp.sum(axis=1, keepdims=True)


def oracle(mode: str, images: np.ndarray, weights: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The small CNN under `mode`, as the README's emulation rule says, tensor by tensor (TF's layout)."""
    kernel, bias, dense = _f16(weights["kernel"]), _f16(weights["bias"]), _f16(weights["dense"])
    with np.errstate(invalid="ignore", over="ignore"):
        # Both modes: Conv always computes in fp16 (its input rounded first; force_fp16 rounds the input at entry).
        conv = _f16((_conv_same(_f16(images), kernel) + bias).astype(np.float32))  # tf2onnx: one Conv with bias
        relu = np.maximum(conv, 0)  # only selects fp16 values: nothing to round
        if mode == "force_fp16":
            pool = _f16(relu.astype(np.float64).mean(axis=(1, 2)).astype(np.float32))
            logits = _f16((pool.astype(np.float64) @ dense).astype(np.float32))
            probs = _f16(_softmax(logits).astype(np.float32))
        else:  # allow_mix_precision: ReduceMean and Softmax stay fp32; MatMul rounds its fp32 input first
            pool = relu.astype(np.float64).mean(axis=(1, 2)).astype(np.float32)
            logits = _f16((_f16(pool).astype(np.float64) @ dense).astype(np.float32))
            probs = _softmax(logits).astype(np.float32)
    return dict(zip(TENSORS, (conv, relu, pool, logits, probs), strict=True))


def conv_error_bound(images: np.ndarray, weights: dict[str, np.ndarray]) -> np.ndarray:
    """How far two fp32 summation orders of the convolution can be apart: 27 terms x eps x sum of |terms|."""
    terms = _conv_same(np.abs(_f16(images)), np.abs(_f16(weights["kernel"]))) + np.abs(_f16(weights["bias"]))
    return 27 * float(np.finfo(np.float32).eps) * terms


def stand_in(contract: ModelContract, images: np.ndarray) -> dict[str, np.ndarray]:
    """The ONNX stand-in's tensors of the same names, read in TF's layout by the conversion's transposes."""
    import onnx

    from atc_wrap.emulation import emulated_value, tensors_rounded_later
    from infer.compare._onnx_graph import OnnxGraph, ranks_of
    from tests.atc_wrap.outputs import onnx_tensors

    assert contract.converted_path is not None
    model = onnx.load(str(contract.converted_path))
    layouts = OnnxGraph(model).tensor_layouts(ranks_of(onnx.shape_inference.infer_shapes(model)))
    values = onnx_tensors(model, {"images:0": images}, list(TENSORS))
    later = tensors_rounded_later(model)
    read = {}
    for name, value in zip(TENSORS, values, strict=True):
        layout = layouts[name]
        assert layout is not None, name
        read[name] = np.transpose(emulated_value(value, name, later), np.argsort(layout))
    return read


def _ulps(a: np.ndarray, b: np.ndarray, dtype: Any) -> np.ndarray:
    """Distance in units in the last place of `dtype`, for finite values (sign-magnitude bits made monotone)."""
    bits = {np.float16: (np.uint16, 0x8000), np.float32: (np.uint32, 0x80000000)}[dtype]

    def key(x: np.ndarray) -> np.ndarray:
        raw = x.astype(dtype).view(bits[0]).astype(np.int64)
        return np.where(raw & bits[1], -(raw & (bits[1] - 1)), raw)

    return np.abs(key(a) - key(b))


@pytest.fixture(scope="module")
def converted(frozen_small_cnn: ModelContract, tmp_path_factory: pytest.TempPathFactory) -> dict[str, ModelContract]:
    import shutil

    from infer.contract import load_contract
    from infer.convert._convert import ConvertOptions, convert_model

    made = {}
    for mode in ("force_fp16", "allow_mix_precision"):
        folder = tmp_path_factory.mktemp(mode) / "model"
        shutil.copytree(frozen_small_cnn.folder, folder)
        made[mode] = convert_model(load_contract(folder / "model.json"),
                                   ConvertOptions(target="onnx", precision_mode=mode)).contract
    return made


# fp16-stored tensors per mode; the others are fp32 in that mode.
_FP16 = {"force_fp16": set(TENSORS), "allow_mix_precision": {"BiasAdd:0", "conv/relu:0", "head/logits:0"}}


def _images(overflowing: bool, kernel: np.ndarray) -> np.ndarray:
    """Two standard normal images; when `overflowing`, sample 1 holds a 3x3 patch of +-60000 (fp16 holds it) signed
    like the conv kernel's first filter, so that filter's output there is far past 65504: inf after the conv, inf
    through relu and the mean, +-inf logits and NaN from the softmax (inf - inf), while sample 0 stays finite."""
    images = np.random.default_rng(5).normal(size=(2, 8, 8, 3)).astype(np.float32)
    if overflowing:
        images[1, 3:6, 3:6, :] = 60000.0 * np.sign(kernel[:, :, :, 0])
    return images


@pytest.mark.parametrize("mode", ["force_fp16", "allow_mix_precision"])
@pytest.mark.parametrize("overflowing", [False, True], ids=["normal", "overflowing"])
def test_stand_in_matches_the_numpy_oracle(converted: dict[str, ModelContract], mode: str, overflowing: bool,
                                           frozen_small_cnn: ModelContract) -> None:
    images = _images(overflowing, _weights(frozen_small_cnn)["kernel"])
    expected = oracle(mode, images, _weights(frozen_small_cnn))
    got = stand_in(converted[mode], images)
    overflowed = 0
    for name in TENSORS:
        want, have = expected[name], got[name]
        assert have.shape == want.shape, name
        # Every inf and NaN where the oracle has it, with its sign.
        assert np.array_equal(np.isnan(have), np.isnan(want)), name
        assert np.array_equal(np.isposinf(have), np.isposinf(want)), name
        assert np.array_equal(np.isneginf(have), np.isneginf(want)), name
        overflowed += int(np.count_nonzero(~np.isfinite(have)))
        finite = np.isfinite(want)
        if name in _FP16[mode]:
            assert np.array_equal(have, _f16(have), equal_nan=True), f"{name} is not fp16-valued"
            ulps = _ulps(have[finite], want[finite], np.float16)
            if name in ("BiasAdd:0", "conv/relu:0"):  # beyond one ulp only within fp32's summation error
                bound = conv_error_bound(images, _weights(frozen_small_cnn))[finite]
                beyond = ulps > 1
                assert np.all(np.abs(have[finite] - want[finite])[beyond] <= bound[beyond]), name
                ulps = np.where(beyond, 1, ulps)
            assert ulps.max(initial=0) <= 1, f"{name}: {ulps.max()} fp16 ulps apart"
            assert np.count_nonzero(ulps) <= max(1, finite.sum() // 100), f"{name}: {np.count_nonzero(ulps)} differ"
        else:
            # A mean of 64 terms (a softmax of 5) summed in another order: at most a few fp32 ulps per term.
            ulps = _ulps(have[finite], want[finite], np.float32)
            assert ulps.max(initial=0) <= 64, f"{name}: {ulps.max()} fp32 ulps apart"
    if overflowing:  # the case is only worth having when fp16 overflows, and only where it must
        assert np.isposinf(got["BiasAdd:0"][1, 4, 4, 0]) and np.isfinite(got["BiasAdd:0"][0]).all()
        assert np.isnan(got["probs:0"][1]).all() and np.isfinite(got["probs:0"][0]).all()
    else:
        assert overflowed == 0
