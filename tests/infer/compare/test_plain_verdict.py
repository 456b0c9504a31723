"""The plain verdict, the one most people read (no --layerwise): fp16 overflow or underflow inside the network
named from the outputs alone, with the next step; the verdict line short, the details below it; no "the
conversion lost the input" where fp16 explains the collapse or where the outputs only vary below fp16's
resolution; a near-uniform classifier's KL judged against its band; no top-1 for NaN."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from atc_wrap.precision.modes import PrecisionMode
from binio.binfile import write_bin
from binio.manifest import BinEntry, DatasetManifest, InputManifest, bin_file_name
from binio.spec import TensorSpec
from infer.compare._compare import CompareOptions, compare
from infer.compare._judge.fp16_trouble import CAUSE, COLLAPSED, INF_NAN, SATURATED
from infer.compare.thresholds import Thresholds
from infer.contract import ModelContract
from tests.builders.frozen import write_frozen
from tests.builders.graphs import build_energy, build_normalised
from tests.cli import Outcome, run_cli
from tests.infer.compare.handmade import write_contract, write_run

SAMPLES = 6


def x_bins(folder: Path, batch: int, low: float = 250, high: float = 350) -> Path:
    """A dataset of SAMPLES rows of x (64 values each, uniform in [low, high)), in files of `batch`."""
    values = np.random.default_rng(0).uniform(low, high, size=(SAMPLES, 64)).astype(np.float32)
    files = []
    for index in range(SAMPLES // batch):
        name = bin_file_name(index)
        files.append(BinEntry(name, write_bin(folder / "x" / name, values[index * batch:(index + 1) * batch]), batch))
    DatasetManifest(root=folder, batch=batch, samples=SAMPLES,
                    inputs=(InputManifest("x:0", "x", "float32", (batch, 64), "ND", tuple(files)),)).save()
    return folder


def _converted(folder: Path, build: Any, batch: int, mode: PrecisionMode = "force_fp16") -> ModelContract:
    from infer.convert._convert import ConvertOptions, convert_model

    frozen = write_frozen(folder, build, ("x:0",), ("energy:0",) if build is build_energy else ("out:0",))
    return convert_model(frozen, ConvertOptions(target="onnx", precision_mode=mode)).contract


def _compared(capsys: pytest.CaptureFixture[str], tmp_path: Path, contract: ModelContract, bins: Path,
              *extra: str) -> Outcome:
    run = run_cli(capsys, "run", contract.path, "--input", bins, "-o", tmp_path / "out")
    assert run.code == 0, run.err
    return run_cli(capsys, "compare", contract.path, "--input", bins, "--actual", tmp_path / "out", "--report",
                   tmp_path / "report", *extra)


@pytest.mark.slow
def test_an_overflow_that_collapses_the_outputs_is_named_with_the_next_step(tmp_path: Path,
                                                                           capsys: pytest.CaptureFixture[str]) -> None:
    contract = _converted(tmp_path / "model", build_normalised, batch=2)
    outcome = _compared(capsys, tmp_path, contract, x_bins(tmp_path / "bins", 2))
    assert outcome.code == 1
    lines = outcome.out.splitlines()
    headline = next(line for line in lines if line.startswith("FAILED"))
    assert headline.startswith(f"FAILED: {CAUSE}; out:0 ") and len(headline) <= 120, headline
    assert headline.count("CosineSimilarity") <= 1  # the reasons once, in full below it
    details = outcome.verdict
    assert "| limits broken: out:0 " in details
    cause = next(line for line in lines if line.startswith("  cause: "))
    assert "out:0 is the same for every sample under force_fp16, where TensorFlow's outputs vary, as they do with " \
           "every op in fp32" in cause
    assert "passed 65504, fp16's largest, and became inf" in cause
    assert "docs/troubleshooting.md#fp16-overflow-and-underflow" in cause
    # The next step: --layerwise finds the op, tune-precision fixes it; the paths as given.
    steps = lines[lines.index(headline):]
    assert any(line.startswith(f"next: infer compare {contract.path} --input {tmp_path / 'bins'} --actual "
                               f"{tmp_path / 'out'} --layerwise   # finds the op") for line in steps), steps
    assert any(line.strip().startswith(f"infer tune-precision {contract.path} --input {tmp_path / 'bins'} -o tuned")
               for line in steps), steps
    # The fp16 column says it; the collapse is the cause, not "the conversion lost the input".
    row = next(line for line in lines if line.startswith("out:0 "))
    assert row.split()[-2] == COLLAPSED
    assert "lost the input" not in outcome.err and "proves little" not in outcome.out + outcome.err
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    assert report["cause"] == CAUSE and report["headline"] == headline
    assert [(t["output"], t["evidence"], t["confirmed"]) for t in report["fp16_trouble"]] == [
        ("out:0", COLLAPSED, True)]
    assert report["outputs"][0]["fp16"] == COLLAPSED and report["warnings"] == []
    html = (tmp_path / "report" / "report.html").read_text()
    assert CAUSE in html and "65504" in html


@pytest.mark.slow
def test_the_same_model_in_fp32_names_no_fp16_cause(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    contract = _converted(tmp_path / "model", build_normalised, batch=2, mode="force_fp32")
    outcome = _compared(capsys, tmp_path, contract, x_bins(tmp_path / "bins", 2))
    assert outcome.code == 0, outcome.out + outcome.err
    assert CAUSE not in outcome.out and "next:" not in outcome.out


@pytest.mark.slow
def test_inf_in_the_outputs_is_named_as_an_overflow(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """energy = sqrt(sum(x*x)) / 16: the sum is inf in fp16, and so is the output."""
    contract = _converted(tmp_path / "model", build_energy, batch=2)
    outcome = _compared(capsys, tmp_path, contract, x_bins(tmp_path / "bins", 2))
    assert outcome.code == 1
    assert outcome.verdict.startswith(f"FAILED: {CAUSE}; energy:0 CosineSimilarity NaN")
    assert (f"cause: energy:0 holds {SAMPLES} inf/NaN values where TensorFlow's are finite: a value inside the "
            "network passed 65504") in outcome.out
    row = next(line for line in outcome.out.splitlines() if line.startswith("energy:0 "))
    assert row.split()[-2] == INF_NAN


def _handmade(tmp_path: Path, golden: np.ndarray, actual: np.ndarray, *, classes: int = 4,
              batch: int = 2) -> ModelContract:
    """A force_fp16 contract with no pb behind it, a dataset whose samples differ, and both sides' outputs."""
    contract = write_contract(tmp_path / "model", (TensorSpec("probs:0", "float32", (None, classes)),))
    root, files = tmp_path / "bins", []
    for index in range(len(golden) // batch):  # the samples differ: the dataset is not one sample repeated
        name = bin_file_name(index)
        values = np.arange(batch * 3, dtype=np.float32).reshape(batch, 3) + 10 * index
        files.append(BinEntry(name, write_bin(root / "x" / name, values), batch))
    DatasetManifest(root=root, batch=batch, samples=len(golden),
                    inputs=(InputManifest("x:0", "x", "float32", (batch, 3), "ND", tuple(files)),)).save()
    write_run(tmp_path / "golden" / "20240101_120000", [golden], batch)
    write_run(tmp_path / "actual" / "20240101_130000", [actual], batch)
    return contract


def _args(tmp_path: Path, contract: ModelContract) -> list[str | Path]:
    return ["compare", contract.path, "--input", tmp_path / "bins", "--actual", tmp_path / "actual", "--golden",
            tmp_path / "golden"]


def test_values_saturated_at_65504_are_an_overflow(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """ATC's saturation mode holds an overflow at ±65504 rather than inf: the same cause."""
    golden = np.random.default_rng(0).uniform(1, 100, size=(4, 4)).astype(np.float32)
    actual = golden.copy()
    actual[1, 2] = 65504.0
    actual[3, 0] = -65504.0
    contract = _handmade(tmp_path, golden, actual)
    outcome = run_cli(capsys, *_args(tmp_path, contract))
    assert outcome.code == 1
    assert outcome.verdict.startswith(f"FAILED: {CAUSE}; ")
    assert "cause: probs:0 holds 2 values at ±65504, fp16's largest, where TensorFlow's are below it" in outcome.out
    row = next(line for line in outcome.out.splitlines() if line.startswith("probs:0 "))
    assert row.split()[-2] == SATURATED


def test_a_collapse_no_fp32_run_can_check_is_a_likely_cause(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """No pb behind the hand-written contract: the fp32 run cannot be made, and the cause says so."""
    golden = np.random.default_rng(0).uniform(0, 1, size=(6, 4)).astype(np.float32)
    actual = np.tile(np.array([0.1, 0.2, 0.3, 0.4], dtype=np.float32), (6, 1))
    contract = _handmade(tmp_path, golden, actual)
    result = compare(contract.path, tmp_path / "bins", tmp_path / "actual", golden=tmp_path / "golden")
    assert [(t.evidence, t.confirmed) for t in result.fp16_trouble] == [(COLLAPSED, False)]
    assert "the stand-in's run of it in fp32, which would tell, could not be made here" in \
        result.fp16_trouble[0].describe()
    assert result.cause == CAUSE and result.warnings == ()


def test_outputs_that_vary_only_below_fp16s_resolution_did_not_lose_the_input(tmp_path: Path) -> None:
    """Like with like: a near-uniform output whose TensorFlow values vary by less than an fp16 step, and whose fp16
    values vary by whole steps, is no "the conversion lost the input" (float32's 1e-6 tolerance is a whole fp16
    step near 1e-3, where it once made the fp16 side look constant and TensorFlow's not)."""
    rng = np.random.default_rng(0)
    base = np.float32(0.001)
    golden = (base + rng.uniform(0, 1.2e-6, size=(8, 4))).astype(np.float32)  # varies past 1e-6 in float32
    step = float(np.spacing(np.float16(base)))
    actual = (np.float16(base) + step * rng.integers(0, 2, size=(8, 4))).astype(np.float32)  # 0 or 1 fp16 step
    contract = _handmade(tmp_path, golden, actual)
    result = compare(contract.path, tmp_path / "bins", tmp_path / "actual", golden=tmp_path / "golden")
    assert result.constant_outputs == ()
    # The fp16 side exactly the same, TensorFlow's varying (past float32's tolerance) by less than an fp16 step
    # near 0.01: said as it is.
    point = np.float16(0.01)
    golden = (np.float32(point) + rng.uniform(-2.5e-6, 2.5e-6, size=(8, 4))).astype(np.float32)
    contract = _handmade(tmp_path / "below", golden, np.full((8, 4), point, np.float32))
    tmp_path = tmp_path / "below"
    result = compare(contract.path, tmp_path / "bins", tmp_path / "actual", golden=tmp_path / "golden")
    (found,) = result.constant_outputs
    assert found.below_fp16 and not found.lost_the_input
    assert "TensorFlow's vary, but by less than fp16 resolves" in found.describe()
    assert "lost the input" not in found.describe() and result.fp16_trouble == ()


def test_kl_alone_on_a_near_uniform_distribution_is_set_against_fp16s_rounding(tmp_path: Path) -> None:
    """A random-weight classifier: every probability near 1/classes, and KL past 0.005 alone, because KL min-max
    normalises a range that is a sliver of the values. Where that is the rounding of the outputs to fp16, the
    output passes and says why; where the converted side moves the distribution further, it fails and says why."""
    rng = np.random.default_rng(0)
    logits = rng.normal(0, 0.0005, size=(8, 10))
    golden = (np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)).astype(np.float32)
    rounded = golden.astype(np.float16).astype(np.float32)  # fp16's rounding of each probability, no more
    contract = _handmade(tmp_path, golden, rounded, classes=10)
    result = compare(contract.path, tmp_path / "bins", tmp_path / "actual", golden=tmp_path / "golden")
    output = result.outputs[0]
    assert output.metrics.kullback_leibler_divergence > 0.005 and output.metrics.cosine_similarity > 0.9999
    assert result.passed and output.kl_band is not None and output.kl_band.within
    assert output.kl_band.ratio == pytest.approx(1.0)
    line = next(line for line in result.details() if line.startswith("probs:0: KL "))
    assert "on a near-uniform distribution" in line and "rounding TensorFlow's own outputs to fp16 gives KL" in line
    assert line.endswith("not a failure (docs/compare.md#kl-on-a-near-uniform-distribution)")
    # Moved further than rounding: ten fp16 steps of noise on every probability.
    moved = rounded + (10 * np.spacing(np.float16(0.1)) * rng.choice([-1, 1], size=golden.shape)).astype(np.float32)
    write_run(tmp_path / "actual" / "20240101_140000", [moved], 2)
    result = compare(contract.path, tmp_path / "bins", tmp_path / "actual", golden=tmp_path / "golden")
    output = result.outputs[0]
    assert not result.passed and output.kl_band is not None and not output.kl_band.within
    assert "the conversion moved the distribution, a failure" in output.kl_band.describe()
    # A KL limit the user set is the user's: no second opinion.
    user = compare(contract.path, tmp_path / "bins", tmp_path / "actual", golden=tmp_path / "golden",
                   options=CompareOptions(thresholds=Thresholds.parse(["kl=0.001"])))
    assert user.outputs[0].kl_band is None


@pytest.mark.slow
def test_a_random_weight_classifiers_kl_is_judged_against_its_band(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """Ten classes, weights near 0: every probability near 0.1, a healthy force_fp16 conversion (cosine 0.99999998)
    whose KL passes 0.005 on fp16's rounding alone. Set against the KL of TensorFlow's outputs rounded to fp16, it
    passes, and says why."""
    weights = np.random.default_rng(1).normal(0, 0.0001, size=(64, 10)).astype(np.float32)

    def build(tf: Any) -> None:
        x = tf.compat.v1.placeholder(tf.float32, [None, 64], name="x")
        tf.nn.softmax(tf.matmul(x, tf.constant(weights)), name="out")

    contract = _converted(tmp_path / "model", build, batch=2)
    outcome = _compared(capsys, tmp_path, contract, x_bins(tmp_path / "bins", 2, low=0, high=1))
    assert outcome.code == 0, outcome.out + outcome.err
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    output = report["outputs"][0]
    assert output["metrics"]["KullbackLeiblerDivergence"] > 0.005 and output["metrics"]["CosineSimilarity"] > 0.9999
    assert output["kl_band"]["within"] is True and output["failures"] == []
    assert "out:0: KL " in outcome.out and "not a failure" in outcome.out
