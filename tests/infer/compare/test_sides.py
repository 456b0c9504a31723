"""Real models: the verdict line names both sides, a side compared with itself is refused, the expected-error band
sees damage msit's thresholds let through, and compare reports its progress."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from binio.binfile import sha256_file
from infer.compare._compare import CompareOptions, compare
from infer.compare._sides.provenance import Side
from infer.contract import ModelContract, load_contract
from infer.convert._convert import ConvertOptions, convert_model
from infer.run import run_model
from infer.run.options import Backend, RunOptions
from tests.cli import run_cli
from tests.conftest import Copy
from tests.infer.compare.conftest import converted_with_edited_kernel

pytestmark = pytest.mark.slow


def _run(contract: ModelContract, bins: Path, out: Path, backend: Backend = "onnxrt") -> Path:
    return run_model(contract.path, bins, out, RunOptions(backend=backend)).folder


def _damaged_fp16(frozen: ModelContract, folder: Path, scale: float) -> ModelContract:
    """The small CNN converted under force_fp16 with noise of `scale` times the conv kernel's own spread."""
    noise = np.random.default_rng(5)
    return converted_with_edited_kernel(
        frozen, folder, lambda values: values + noise.normal(scale=scale * float(values.std()), size=values.shape),
        "force_fp16")


def test_last_line_names_both_sides_by_sha256(onnx_small_cnn_fp16: ModelContract, cnn_bins: Path, cnn_golden: Path,
                                              copy_model: Copy, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    contract = copy_model(onnx_small_cnn_fp16)
    actual = _run(contract, cnn_bins, tmp_path / "out")
    outcome = run_cli(capsys, "compare", contract.path, "--input", cnn_bins, "--actual", actual, "--golden",
                      cnn_golden)
    assert outcome.code == 0, outcome.err
    assert contract.converted is not None
    expected = (f"PASSED | golden: tensorflow model.pb ({contract.pb_sha256[:8]}) | actual: onnxrt model.onnx "
                f"force_fp16 ({contract.converted.sha256[:8]}) | 5 samples, dataset "
                f"{sha256_file(cnn_bins / 'dataset.json')[:8]} | worst sample ")
    assert outcome.verdict.startswith(expected)


def test_golden_and_actual_from_one_graph_on_one_backend_are_refused(onnx_small_cnn: ModelContract, cnn_bins: Path,
                                                                     cnn_golden: Path, copy_model: Copy, tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    contract = copy_model(onnx_small_cnn)
    tf_run = _run(contract, cnn_bins, tmp_path / "tf", backend="tf")
    message = (f"error: --actual {tf_run}: computed by tensorflow model.pb ({contract.pb_sha256[:8]}), the same graph "
               "on the same backend as the golden outputs; the comparison would prove nothing about a conversion")
    # Refused before TensorFlow computes the golden outputs, and with them given.
    outcome = run_cli(capsys, "compare", contract.path, "--input", cnn_bins, "--actual", tf_run)
    assert (outcome.code, outcome.error_line) == (2, message)
    assert "golden outputs: running TensorFlow" not in outcome.err
    outcome = run_cli(capsys, "compare", contract.path, "--input", cnn_bins, "--actual", tf_run, "--golden", cnn_golden)
    assert (outcome.code, outcome.error_line) == (2, message)
    # A golden folder msame-style, without run.json, is taken for TensorFlow's outputs, as --golden promises.
    bare_golden = tmp_path / "bare_golden"
    shutil.copytree(cnn_golden, bare_golden)
    (bare_golden / "run.json").unlink()
    outcome = run_cli(capsys, "compare", contract.path, "--input", cnn_bins, "--actual", tf_run, "--golden",
                      bare_golden)
    assert (outcome.code, outcome.error_line) == (2, message)
    outcome = run_cli(capsys, "compare", contract.path, "--input", cnn_bins, "--actual", tf_run, "--golden", cnn_golden,
                      "--allow-same-backend")
    assert outcome.code == 0
    # Two runs of one onnx model are one backend too.
    onnx_run = _run(contract, cnn_bins, tmp_path / "a")
    outcome = run_cli(capsys, "compare", contract.path, "--input", cnn_bins, "--actual", onnx_run, "--golden",
                      _run(contract, cnn_bins, tmp_path / "b"))
    assert outcome.code == 2 and "the same graph on the same backend" in outcome.error_line


def test_expected_band_flags_damage_that_msit_passes(frozen_small_cnn: ModelContract,
                                                     onnx_small_cnn_fp16: ModelContract, cnn_bins: Path,
                                                     cnn_golden: Path, copy_model: Copy, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    damaged = _damaged_fp16(frozen_small_cnn, tmp_path / "damaged", scale=0.05)
    actual = _run(damaged, cnn_bins, tmp_path / "out")
    outcome = run_cli(capsys, "compare", damaged.path, "--input", cnn_bins, "--actual", actual, "--golden", cnn_golden,
                      "--expected-from-emulation", "--report", tmp_path / "report")
    assert outcome.code == 0, outcome.out + outcome.err  # msit's rule passes: the default verdict
    last = outcome.verdict
    assert last.startswith("PASSED by msit's thresholds, but probs:0 is ") and " its expected band (" in last
    assert "emulated force_fp16 (FLAGGED)" in last
    result = compare(damaged.path, cnn_bins, actual, golden=cnn_golden,
                     options=CompareOptions(expected_from_emulation=True))
    (band,) = result.expected
    assert band.flagged and band.rmse_ratio > 10 and result.outputs[0].passed
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    assert report["expected_from_emulation"][0]["flagged"] is True and report["passed"] is True
    outcome = run_cli(capsys, "compare", damaged.path, "--input", cnn_bins, "--actual", actual, "--golden", cnn_golden,
                      "--fail-on-expected")
    assert outcome.code == 1
    assert outcome.verdict.startswith(
        "FAILED by the expected band (msit's thresholds pass): probs:0 is ")
    row = next(line for line in outcome.out.splitlines() if line.startswith("probs:0 "))
    assert row.split()[-1] == "FAIL"  # msit's rule passes, the band asked to fail the run does not
    # The healthy conversion sits inside its band (the stand-in is the emulation: a ratio of 1).
    healthy = copy_model(onnx_small_cnn_fp16)
    result = compare(healthy.path, cnn_bins, _run(healthy, cnn_bins, tmp_path / "healthy"), golden=cnn_golden,
                     options=CompareOptions(fail_on_expected=True))
    (band,) = result.expected
    assert result.passed and not band.flagged and band.rmse_ratio == pytest.approx(1.0)


def test_the_emulated_run_takes_the_converted_models_bins_without_a_warning(onnx_small_cnn_fp16: ModelContract,
                                                                            cnn_bins: Path, copy_model: Copy,
                                                                            tmp_path: Path,
                                                                            caplog: pytest.LogCaptureFixture) -> None:
    """Bins dumped for the converted model feed the emulated model (another model of the same pb) on purpose."""
    from binio.manifest import load_manifest

    contract = copy_model(onnx_small_cnn_fp16)
    assert contract.converted is not None
    bins = tmp_path / "bins"
    shutil.copytree(cnn_bins, bins)
    replace(load_manifest(bins / "dataset.json"), model_sha256=contract.converted.sha256).save()
    actual = _run(contract, bins, tmp_path / "out")
    with caplog.at_level("WARNING", logger="infer.run._plain"):
        result = compare(contract.path, bins, actual, options=CompareOptions(expected_from_emulation=True),
                         cache_root=tmp_path / "cache")
    assert len(result.expected) == 1
    assert caplog.messages == []
    # The emulated model is that pb converted under that mode again: since conversions are deterministic, the very
    # bytes of the converted model. The same bins run by hand on another model of that pb still say so.
    emulated = load_contract(next((tmp_path / "cache").glob("emulated/*/model/model.json")))
    assert emulated.converted is not None and emulated.converted.sha256 == contract.converted.sha256
    other = tmp_path / "fp32"
    shutil.copytree(contract.folder, other)
    another = convert_model(load_contract(other / "model.json"),
                            ConvertOptions(target="onnx", precision_mode="force_fp32")).contract
    with caplog.at_level("WARNING", logger="infer.run._plain"):
        _run(another, bins, tmp_path / "by_hand")
    assert [m for m in caplog.messages if "made for another model" in m]


def test_expected_band_is_on_by_default_for_an_om(onnx_small_cnn_fp16: ModelContract, cnn_bins: Path, cnn_golden: Path,
                                                  copy_model: Copy, tmp_path: Path) -> None:
    contract = copy_model(onnx_small_cnn_fp16)
    actual = _run(contract, cnn_bins, tmp_path / "out")
    assert contract.converted is not None
    assert compare(contract.path, cnn_bins, actual, golden=cnn_golden).expected == ()  # not an om: asked only
    as_om = replace(contract, converted=replace(contract.converted, target="om")).save()
    assert len(compare(as_om.path, cnn_bins, actual, golden=cnn_golden).expected) == 1
    assert compare(as_om.path, cnn_bins, actual, golden=cnn_golden,
                   options=CompareOptions(expected_from_emulation=False)).expected == ()


def test_progress_is_heard_for_the_golden_run_and_every_batch_read(onnx_small_cnn: ModelContract, cnn_bins: Path,
                                                                   copy_model: Copy, tmp_path: Path) -> None:
    contract = copy_model(onnx_small_cnn)
    actual = _run(contract, cnn_bins, tmp_path / "out")
    heard: list[tuple[str, int, int]] = []
    compare(contract.path, cnn_bins, actual, progress=lambda what, done, total: heard.append((what, done, total)))
    golden = [h for h in heard if h[0] == "golden"]
    assert golden[-1] == ("golden", 3, 3)  # three batch files
    reading = [h for h in heard if h[0] == "probs:0"]
    assert reading == [("probs:0", done, 6) for done in range(7)]  # two passes over three batches


def test_with_tensorflows_golden_the_sides_are_checked_once_before_it_runs(onnx_small_cnn: ModelContract,
                                                                           cnn_bins: Path, copy_model: Copy,
                                                                           tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    import infer.compare._compare

    contract = copy_model(onnx_small_cnn)
    actual = _run(contract, cnn_bins, tmp_path / "out")
    real = infer.compare._compare.refuse_same_backend
    checked: list[tuple[str, str]] = []

    def counting(contract: ModelContract, actual: Side, golden: Side) -> None:
        checked.append((actual.backend, golden.backend))
        real(contract, actual, golden)

    monkeypatch.setattr(infer.compare._compare, "refuse_same_backend", counting)
    result = compare(contract.path, cnn_bins, tmp_path / "out")  # the run's root: resolved to its run folder
    assert result.actual_dir == str(actual) and result.golden_source in ("tensorflow", "cache")
    assert checked == [("onnxrt", "tensorflow")]
    assert result.provenance is not None
    assert result.provenance.golden.backend == "tensorflow" and result.provenance.actual.backend == "onnxrt"
