"""An exact oracle for the fp16 emulation: the small CNN computed in numpy op by op as the conversion's precision
plan says (docs/precision-plan.md: each op's input and output dtype on the chip under the mode; fp32 arithmetic
inside each op; an fp16 input rounded as the op reads it, weights included; an fp16 output rounded), checked
against the ONNX stand-in tensor by tensor, inf and NaN from overflow included, for each mode on Ascend310 and
for modes whose plan differs on other chips.

Where the two may differ, and why: numpy sums a convolution or a matrix product in another order than ONNX
Runtime's kernels (and in float64 here), so a value within an fp32 rounding of the midpoint between two fp16
numbers can round to either: one fp16 ulp, on few elements. Where a convolution's terms cancel (inputs in the
tens of thousands, a result near 0) fp32's own summation error, bounded by 27 terms x fp32 eps x the sum of
|terms|, can exceed an fp16 ulp of the small result: there the bound is what is checked. Tensors kept in fp32
differ by the same summation order and exp implementation: a few fp32 ulps (a convolution's, within the same
summation bound). Everything else is bit for bit, and every inf and NaN is in the same place.
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np
import pytest

from atc_wrap.precision.modes import PrecisionMode
from atc_wrap.precision.plan import PlannedOp, PrecisionPlan
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


def _planned(entry: PlannedOp, compute: Any, *inputs: np.ndarray) -> np.ndarray:
    """One op as the plan has it: its inputs rounded where it reads fp16, fp32 (float64 here) inside, its output
    rounded where it stores fp16."""
    read = [_f16(x) if entry.input_dtype == "float16" else x for x in inputs]
    with np.errstate(invalid="ignore", over="ignore"):
        out = np.asarray(compute(*read)).astype(np.float32)
    return _f16(out) if entry.output_dtype == "float16" else out


def oracle(plan: PrecisionPlan, images: np.ndarray, weights: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The small CNN under `plan`, tensor by tensor (TF's layout). tf2onnx fuses Conv2D and BiasAdd into one Conv,
    which reads as the Conv2D and stores as the BiasAdd (`atc_wrap.standin._fused_ops`)."""
    entries = {entry.node: entry for entry in plan.ops}
    conv2d, bias_add = entries["Conv2D"], entries["BiasAdd"]
    fused = PlannedOp(node="BiasAdd", op_type="BiasAdd", ascend_op="", engine="aicore",
                      input_dtype=conv2d.input_dtype, output_dtype=bias_add.output_dtype, decided_by="mode", why="")
    conv = _planned(fused, lambda x, k, b: _conv_same(x, k) + b, images, weights["kernel"], weights["bias"])
    relu = _planned(entries["conv/relu"], lambda x: np.maximum(x, 0), conv)
    pool = _planned(entries["pool"], lambda x: x.astype(np.float64).mean(axis=(1, 2)), relu)
    logits = _planned(entries["head/logits"], lambda x, w: x.astype(np.float64) @ w, pool, weights["dense"])
    probs = _planned(entries["probs"], _softmax, logits)
    return dict(zip(TENSORS, (conv, relu, pool, logits, probs), strict=True))


def stored_fp16(plan: PrecisionPlan) -> set[str]:
    """The tensors the plan stores in fp16 (the op making each one gives fp16 out)."""
    makers = {"BiasAdd:0": "BiasAdd", "conv/relu:0": "conv/relu", "pool:0": "pool", "head/logits:0": "head/logits",
              "probs:0": "probs"}
    entries = {entry.node: entry for entry in plan.ops}
    return {tensor for tensor, node in makers.items() if entries[node].output_dtype == "float16"}


def conv_error_bound(images: np.ndarray, weights: dict[str, np.ndarray]) -> np.ndarray:
    """How far two fp32 summation orders of the convolution can be apart: 27 terms x eps x sum of |terms|."""
    terms = _conv_same(np.abs(_f16(images)), np.abs(_f16(weights["kernel"]))) + np.abs(_f16(weights["bias"]))
    return 27 * float(np.finfo(np.float32).eps) * terms


def stand_in(contract: ModelContract, images: np.ndarray) -> dict[str, np.ndarray]:
    """The ONNX stand-in's tensors of the same names, read in TF's layout by the conversion's transposes."""
    import onnx

    from atc_wrap.standin.emulation import emulated_value, tensors_rounded_later
    from infer.compare._layers.layouts import read_in_tf_layout, shapes_of, track_layouts
    from infer.compare._layers.onnx_graph import OnnxGraph
    from tests.atc_wrap.outputs import onnx_tensors

    assert contract.converted_path is not None
    model = onnx.load(str(contract.converted_path))
    layouts = track_layouts(OnnxGraph(model), shapes_of(onnx.shape_inference.infer_shapes(model)))
    values = onnx_tensors(model, {"images:0": images}, list(TENSORS))
    later = tensors_rounded_later(model)
    read = {}
    for name, value in zip(TENSORS, values, strict=True):
        perm = layouts[name].perm
        assert perm is not None, name
        tf_shape = tuple(value.shape[perm.index(axis)] for axis in range(len(perm)))
        found = read_in_tf_layout(tf_shape, emulated_value(value, name, later), perm)
        assert found is not None, name
        read[name] = found
    return read


def _ulps(a: np.ndarray, b: np.ndarray, dtype: Any) -> np.ndarray:
    """Distance in units in the last place of `dtype`, for finite values (sign-magnitude bits made monotone)."""
    bits = {np.float16: (np.uint16, 0x8000), np.float32: (np.uint32, 0x80000000)}[dtype]

    def key(x: np.ndarray) -> np.ndarray:
        raw = x.astype(dtype).view(bits[0]).astype(np.int64)
        return np.where(raw & bits[1], -(raw & (bits[1] - 1)), raw)

    return np.abs(key(a) - key(b))


# Every mode on the default chip, and modes whose plan for this CNN differs on another chip's table.
CASES = [(mode, "Ascend310") for mode in ("force_fp16", "allow_fp32_to_fp16", "force_fp32", "must_keep_origin_dtype",
                                          "allow_mix_precision")] + [
    ("allow_mix_precision", "Ascend310P3"),  # ReduceMeanD gray there: the mean follows the fp16 ops before it
    ("force_fp32", "Ascend910B2")]


@pytest.fixture(scope="module")
def converted(frozen_small_cnn: ModelContract,
              tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], ModelContract]:
    import shutil

    from infer.contract import load_contract
    from infer.convert._convert import ConvertOptions, convert_model

    made = {}
    for mode, chip in CASES:
        folder = tmp_path_factory.mktemp(f"{mode}-{chip}") / "model"
        shutil.copytree(frozen_small_cnn.folder, folder)
        made[mode, chip] = convert_model(load_contract(folder / "model.json"), ConvertOptions(
            target="onnx", precision_mode=cast(PrecisionMode, mode), soc_version=chip,
            allow_unsupported=True)).contract  # must_keep_origin_dtype's fp32 Conv2D on Ascend310: ATC refuses
    return made


def _images(overflowing: bool, kernel: np.ndarray) -> np.ndarray:
    """Two standard normal images; when `overflowing`, sample 1 holds a 3x3 patch of +-60000 (fp16 holds it) signed
    like the conv kernel's first filter, so that filter's output there is far past 65504: inf after the conv, inf
    through relu and the mean, +-inf logits and NaN from the softmax (inf - inf), while sample 0 stays finite."""
    images = np.random.default_rng(5).normal(size=(2, 8, 8, 3)).astype(np.float32)
    if overflowing:
        images[1, 3:6, 3:6, :] = 60000.0 * np.sign(kernel[:, :, :, 0])
    return images


def _plan(contract: ModelContract) -> PrecisionPlan:
    assert contract.converted is not None
    plan = contract.converted.plan()
    assert plan is not None
    return plan


def test_the_cases_cover_fp16_fp32_and_both(converted: dict[tuple[str, str], ModelContract]) -> None:
    """The oracle is only worth running on plans that differ: all fp16, all fp32, and mixes of the two."""
    stored = {case: frozenset(stored_fp16(_plan(contract))) for case, contract in converted.items()}
    assert stored["force_fp16", "Ascend310"] == set(TENSORS)
    assert stored["must_keep_origin_dtype", "Ascend310"] == set()
    assert stored["allow_mix_precision", "Ascend310"] == {"BiasAdd:0", "conv/relu:0", "head/logits:0", "probs:0"}
    assert stored["allow_mix_precision", "Ascend310P3"] == set(TENSORS)
    assert len(set(stored.values())) >= 4


@pytest.mark.parametrize(("mode", "chip"), CASES)
@pytest.mark.parametrize("overflowing", [False, True], ids=["normal", "overflowing"])
def test_stand_in_matches_the_numpy_oracle(converted: dict[tuple[str, str], ModelContract], mode: str, chip: str,
                                           overflowing: bool, frozen_small_cnn: ModelContract) -> None:
    images = _images(overflowing, _weights(frozen_small_cnn)["kernel"])
    plan = _plan(converted[mode, chip])
    expected = oracle(plan, images, _weights(frozen_small_cnn))
    got = stand_in(converted[mode, chip], images)
    fp16 = stored_fp16(plan)
    bound = conv_error_bound(images, _weights(frozen_small_cnn))
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
        conv_like = name in ("BiasAdd:0", "conv/relu:0")  # beyond one ulp only within fp32's summation error
        if name in fp16:
            assert np.array_equal(have, _f16(have), equal_nan=True), f"{name} is not fp16-valued"
            ulps = _ulps(have[finite], want[finite], np.float16)
            if conv_like:
                beyond = ulps > 1
                assert np.all(np.abs(have[finite] - want[finite])[beyond] <= bound[finite][beyond]), name
                ulps = np.where(beyond, 1, ulps)
            assert ulps.max(initial=0) <= 1, f"{name}: {ulps.max()} fp16 ulps apart"
            assert np.count_nonzero(ulps) <= max(1, finite.sum() // 100), f"{name}: {np.count_nonzero(ulps)} differ"
        else:
            # A sum in another order: at most a few fp32 ulps per term (a convolution: within its summation bound).
            ulps = _ulps(have[finite], want[finite], np.float32)
            if conv_like:
                ulps = np.where(np.abs(have[finite] - want[finite]) <= bound[finite], 0, ulps)
            assert ulps.max(initial=0) <= 64, f"{name}: {ulps.max()} fp32 ulps apart"
    if not overflowing or not fp16:
        assert overflowed == 0  # nothing passes fp32's range
    elif "BiasAdd:0" in fp16:  # the case is only worth having when fp16 overflows, and only where it must
        assert np.isposinf(got["BiasAdd:0"][1, 4, 4, 0]) and np.isfinite(got["BiasAdd:0"][0]).all()
        assert np.isnan(got["probs:0"][1]).all() and np.isfinite(got["probs:0"][0]).all()
