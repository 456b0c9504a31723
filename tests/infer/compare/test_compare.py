"""`infer compare` over run folders written by hand: verdicts, padding, worst samples, top-k, reports, errors."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from binio.errors import InferError
from binio.spec import TensorSpec
from infer.compare._compare import CompareOptions, compare
from infer.compare._judge.metrics import compute_metrics
from infer.compare._reports.report_csv import COLUMNS
from infer.contract import ModelContract
from tests.cli import run_cli
from tests.infer.compare.handmade import write_contract, write_dataset, write_run

BATCH, SAMPLES, FILES = 4, 10, 3  # the last file holds 2 real rows and 2 rows of padding

Case = tuple[ModelContract, Path, np.ndarray, np.ndarray]
"""The `case` fixture: the contract, its bins folder, the golden probs and feature map."""


@pytest.fixture
def case(tmp_path: Path) -> Case:
    """A contract with a classifier output and a feature map; golden outputs; bins."""
    contract = write_contract(tmp_path / "model", (TensorSpec("probs:0", "float32", (None, 5)),
                                                   TensorSpec("feat:0", "float32", (None, 2, 3))))
    write_dataset(tmp_path / "bins", batch=BATCH, samples=SAMPLES)
    rng = np.random.default_rng(0)
    probs = rng.random((FILES * BATCH, 5)).astype(np.float32)
    feat = rng.normal(size=(FILES * BATCH, 2, 3)).astype(np.float32)
    write_run(tmp_path / "golden" / "20240101_120000", [probs, feat], BATCH)
    return contract, tmp_path / "bins", probs, feat


def _actual(tmp_path: Path, probs: np.ndarray, feat: np.ndarray) -> Path:
    return write_run(tmp_path / "actual" / "20240101_130000", [probs, feat], BATCH)


def _args(tmp_path: Path, contract: ModelContract, *extra: str) -> list[str]:
    return ["compare", str(contract.path), "--input", str(tmp_path / "bins"), "--actual", str(tmp_path / "actual"),
            "--golden", str(tmp_path / "golden"), *extra]


def test_close_outputs_pass_and_padding_is_left_out(case: Case, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    contract, _, probs, feat = case
    actual_probs = probs + np.float32(1e-6)
    actual_probs[-2:] = 1e6  # the two padding rows: garbage the comparison must not see
    _actual(tmp_path, actual_probs, feat)
    outcome = run_cli(capsys, *_args(tmp_path, contract))
    assert outcome.code == 0, outcome.out + outcome.err
    assert outcome.verdict.split(" | ")[0] == "PASSED"
    result = compare(contract.path, tmp_path / "bins", tmp_path / "actual", golden=tmp_path / "golden")
    assert bool(result) and result.samples == SAMPLES and result.padding == 2
    assert result.outputs[0].metrics.elements == SAMPLES * 5
    assert result.outputs[0].metrics.max_absolute_error < 1e-5
    assert [b.rows for b in result.outputs[0].batches] == [4, 4, 2]


def test_streamed_metrics_equal_the_in_memory_ones(case: Case, tmp_path: Path) -> None:
    contract, _, probs, feat = case
    noisy = feat + np.random.default_rng(1).normal(scale=0.05, size=feat.shape).astype(np.float32)
    _actual(tmp_path, probs, noisy)
    result = compare(contract.path, tmp_path / "bins", tmp_path / "actual", golden=tmp_path / "golden")
    direct = compute_metrics(noisy[:SAMPLES], feat[:SAMPLES], atol=1e-4, rtol=1e-3)
    streamed = result.outputs[1].metrics
    for name in ("CosineSimilarity", "KullbackLeiblerDivergence", "RelativeEuclideanDistance", "MeanRelativeError",
                 "MaxAbsoluteError", "AllclosePassRate"):
        assert streamed.value(name) == pytest.approx(direct.value(name), rel=1e-9), name
    assert streamed.golden_std == pytest.approx(direct.golden_std, rel=1e-9)


def test_one_bad_sample_fails_and_is_the_worst(case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    contract, _, probs, feat = case
    bad = feat.copy()
    bad[5] = -bad[5] * 3  # sample 5: second file, row 1
    _actual(tmp_path, probs, bad)
    outcome = run_cli(capsys, *_args(tmp_path, contract))
    assert outcome.code == 1
    last = outcome.verdict
    assert last.startswith("FAILED: feat:0 CosineSimilarity ")
    assert "probs:0" not in last
    result = compare(contract.path, tmp_path / "bins", tmp_path / "actual", golden=tmp_path / "golden")
    worst = result.outputs[1].worst_samples[0]
    assert (worst.sample, worst.stem, worst.row) == (5, "000001", 1)
    assert worst.cosine_similarity == pytest.approx(-1.0)
    assert [bool(b.failures) for b in result.outputs[1].batches] == [False, True, False]


def test_thresholds_override_the_verdict(case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    contract, _, probs, feat = case
    _actual(tmp_path, probs, feat * 1.1)  # RED 0.1 fails msit's 0.05; KL and cosine are unchanged by scaling
    assert run_cli(capsys, *_args(tmp_path, contract)).code == 1
    assert run_cli(capsys, *_args(tmp_path, contract, "--threshold", "feat:0:red=0.2", "-t", "rmse=1")).code == 0
    outcome = run_cli(capsys, *_args(tmp_path, contract, "--threshold", "rmse=0", "-t", "feat:red=0.2"))
    assert outcome.code == 1  # probs:0 is unchanged (RMSE 0), feat:0 is not
    assert outcome.verdict.split(" | ")[0].startswith("FAILED: feat:0 RootMeanSquareError ")
    never_met = run_cli(capsys, *_args(tmp_path, contract, "--threshold", "cosine=1.5"))
    assert never_met.code == 2
    assert never_met.error_line == ("error: --threshold 'cosine=1.5': expected a limit from -1 to 1 (the values "
                                    "CosineSimilarity takes), found 1.5")


def test_topk_and_labels(case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    contract, _, probs, feat = case
    golden_top1 = probs[:SAMPLES].argmax(axis=1)
    actual = probs.copy()
    actual[0, golden_top1[0]] = -1.0  # sample 0: the actual model's top-1 moves away
    _actual(tmp_path, actual, feat)
    labels = golden_top1.copy()
    labels[9] = (labels[9] + 1) % 5  # sample 9: golden is wrong too
    (tmp_path / "labels.txt").write_text("".join(f"{v}\n" for v in labels))  # bare: by position
    result = compare(contract.path, tmp_path / "bins", tmp_path / "actual", golden=tmp_path / "golden",
                     options=CompareOptions(topk=5, labels=tmp_path / "labels.txt"))
    topk = result.outputs[0].topk
    assert topk is not None and result.outputs[1].topk is None
    assert topk.top1_agreement == pytest.approx(0.9)
    assert topk.topk_overlap == 1.0  # k = 5 = every class
    assert topk.accuracy is not None
    assert topk.accuracy.golden_top1 == pytest.approx(0.9) and topk.accuracy.actual_top1 == pytest.approx(0.8)
    assert topk.accuracy.top1_difference == pytest.approx(-0.1)
    assert topk.accuracy.golden_topk == 1.0
    np.save(tmp_path / "labels.npy", labels)
    outcome = run_cli(capsys, *_args(tmp_path, contract, "--labels", str(tmp_path / "labels.npy"), "--topk", "2"))
    assert "probs:0: top-1 agreement 90.00%" in outcome.out
    assert "top-1 accuracy golden 90.00% actual 80.00% (-10.00%)" in outcome.out


@pytest.mark.slow
def test_reports(case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    contract, _, probs, feat = case
    _actual(tmp_path, probs, feat * 1.1)
    outcome = run_cli(capsys, *_args(tmp_path, contract, "--report", str(tmp_path / "report")))
    assert outcome.code == 1
    with open(tmp_path / "report" / "report.csv", newline="") as handle:
        rows = list(csv.reader(handle))
    assert tuple(rows[0]) == COLUMNS
    assert rows[0][:9] == ["Index", "OpType", "NPUDump", "DataType", "Address", "GroundTruth", "DataType",
                           "TensorIndex", "Shape"]
    assert len(rows) == 3 and all(len(r) == len(COLUMNS) for r in rows)
    feat_row = dict(zip(COLUMNS, rows[2], strict=True))
    assert feat_row["NPUDump"] == "feat" and feat_row["TensorIndex"] == "feat:output:0"
    assert feat_row["DataType"] == "float32" and feat_row["Shape"] == "[4,2,3]"
    assert float(feat_row["RelativeEuclideanDistance"]) == pytest.approx(0.1, rel=1e-5)
    assert feat_row["CompareFailReason"].startswith("feat:0 RelativeEuclideanDistance 0.1")
    assert rows[1][-1] == ""  # probs:0 passed
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    assert report["passed"] is False and report["outputs"][1]["metrics"]["RelativeEuclideanDistance"] > 0.05
    assert len(report["outputs"][1]["batches"]) == FILES
    page = (tmp_path / "report" / "report.html").read_text()
    assert page.count('src="data:image/png;base64,') >= 8  # 4 plots for each of the two outputs
    assert "http://" not in page and "https://" not in page
    assert "FAILED: feat:0 RelativeEuclideanDistance" in page


def test_fp16_actual_outputs_read_as_the_converted_model_gives_them(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    contract = write_contract(tmp_path / "model", (TensorSpec("y:0", "float32", (None, 3)),),
                              converted_outputs=(TensorSpec("y:0", "float16", (None, 3)),))
    write_dataset(tmp_path / "bins", batch=2, samples=4)
    golden = np.linspace(-2, 2, 12, dtype=np.float32).reshape(4, 3) / 3
    write_run(tmp_path / "golden" / "20240101_120000", [golden], 2)
    write_run(tmp_path / "actual" / "20240101_120000", [golden.astype(np.float16)], 2)
    outcome = run_cli(capsys, *_args(tmp_path, contract))
    assert outcome.code == 0
    result = compare(contract.path, tmp_path / "bins", tmp_path / "actual", golden=tmp_path / "golden")
    assert 0 < result.outputs[0].metrics.max_absolute_error < 1e-3
    assert result.outputs[0].actual_dtype == "float16"


def test_missing_output_file(case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    contract, _, probs, feat = case
    folder = _actual(tmp_path, probs, feat)
    (folder / "000002_output_1.bin").unlink()
    outcome = run_cli(capsys, *_args(tmp_path, contract))
    assert outcome.code == 2
    assert outcome.error_line == (f"error: {folder / '000002_output_1.bin'}: missing: the dataset has batch 000002 "
                                  "and the model has output 1 (feat:0)")


def test_wrong_size_output_file(case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    contract, _, probs, feat = case
    folder = _actual(tmp_path, probs, feat)
    (folder / "000000_output_0.bin").write_bytes(probs[:4].astype(np.float64).tobytes())
    outcome = run_cli(capsys, *_args(tmp_path, contract))
    assert outcome.error_line == (f"error: {folder / '000000_output_0.bin'}: expected 80 bytes for shape (4,5) "
                                  "float32, got 160 (is it float64?)")


def test_labels_count_must_match(case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    contract, _, probs, feat = case
    _actual(tmp_path, probs, feat)
    (tmp_path / "labels.txt").write_text("1\n2\n")
    outcome = run_cli(capsys, *_args(tmp_path, contract, "--labels", str(tmp_path / "labels.txt")))
    assert outcome.error_line == f"error: {tmp_path / 'labels.txt'}: 2 labels for a dataset of 10 samples"


def test_threshold_for_unknown_output(case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    contract, _, probs, feat = case
    _actual(tmp_path, probs, feat)
    outcome = run_cli(capsys, *_args(tmp_path, contract, "-t", "logits:kl=0.1"))
    assert outcome.error_line == ("error: --threshold logits:KullbackLeiblerDivergence: no output named 'logits'; "
                                  "outputs are: probs:0, feat:0")


def test_actual_folder_without_outputs(case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    contract, *_ = case
    (tmp_path / "actual").mkdir()
    outcome = run_cli(capsys, *_args(tmp_path, contract))
    assert outcome.error_line == (f"error: --actual {tmp_path / 'actual'}: no output files (<stem>_output_<i>.bin) "
                                  "and no timestamp folder inside")


def test_sides_of_different_sizes_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    contract = write_contract(tmp_path / "model", (TensorSpec("y:0", "float32", (None, 3)),),
                              converted_outputs=(TensorSpec("y:0", "float32", (None, 4)),))
    write_dataset(tmp_path / "bins", batch=2, samples=2)
    write_run(tmp_path / "golden" / "20240101_120000", [np.zeros((2, 3), dtype=np.float32)], 2)
    write_run(tmp_path / "actual" / "20240101_120000", [np.zeros((2, 4), dtype=np.float32)], 2)
    outcome = run_cli(capsys, *_args(tmp_path, contract))
    assert outcome.error_line == "error: output 0 (y:0): actual (2,4) and golden (2,3) hold different element counts"


def test_mistakes_are_refused_before_tensorflow_runs_for_the_golden(case: Case, tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """Without --golden TensorFlow runs first, for minutes on a large dataset (here it could not: the contract has
    no pb); a wrong labels file, threshold or --actual must be refused before that."""
    contract, _, probs, feat = case
    _actual(tmp_path, probs, feat)
    (tmp_path / "labels.txt").write_text("1\n2\n")
    base = ("compare", str(contract.path), "--input", str(tmp_path / "bins"))
    outcome = run_cli(capsys, *base, "--actual", str(tmp_path / "actual"), "--labels", str(tmp_path / "labels.txt"))
    assert outcome.error_line == f"error: {tmp_path / 'labels.txt'}: 2 labels for a dataset of 10 samples"
    assert "golden outputs" not in outcome.err
    outcome = run_cli(capsys, *base, "--actual", str(tmp_path / "actual"), "-t", "logits:kl=0.1")
    assert outcome.error_line == ("error: --threshold logits:KullbackLeiblerDivergence: no output named 'logits'; "
                                  "outputs are: probs:0, feat:0")
    outcome = run_cli(capsys, *base, "--actual", str(tmp_path / "nothing"))
    assert outcome.error_line == f"error: --actual {tmp_path / 'nothing'}: no such folder"


@pytest.mark.parametrize(("bad", "shown"), [(5, "5"), (-1, "-1")])
def test_label_outside_the_classes_is_refused(case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str], bad: int,
                                              shown: str) -> None:
    """1-based labels (5 for the last of 5 classes) would silently count as wrong answers."""
    contract, _, probs, feat = case
    _actual(tmp_path, probs, feat)
    labels = [0, 1, 2, 3, 4, 0, 1, bad, 3, 4]
    (tmp_path / "labels.txt").write_text("".join(f"{v}\n" for v in labels))
    outcome = run_cli(capsys, *_args(tmp_path, contract, "--labels", str(tmp_path / "labels.txt")))
    assert outcome.code == 2
    assert outcome.error_line == (f"error: {tmp_path / 'labels.txt'}: label {shown} of sample 7 is not a class of "
                                  "probs:0 (0 to 4)")


@pytest.mark.parametrize("option", ["--report", "--dump-golden"])
def test_output_folder_that_is_a_file_is_refused_first(case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                       option: str) -> None:
    contract, _, probs, feat = case
    _actual(tmp_path, probs, feat)
    (tmp_path / "taken").write_text("a file")
    outcome = run_cli(capsys, *_args(tmp_path, contract, option, str(tmp_path / "taken")))
    assert outcome.code == 2 and outcome.out == ""  # refused before any comparison
    assert outcome.error_line == f"error: {option} {tmp_path / 'taken'}: is a file; expected a folder to write into"


@pytest.mark.slow
@pytest.mark.parametrize(("option", "value", "message"), [
    ("--topk", "0", "--topk 0: expected 1 or more"),
    ("--atol", "-1e-3", "--atol -0.001: expected 0 or more"),
    ("--rtol", "nan", "--rtol nan: expected 0 or more"),
])
def test_option_values_out_of_range(case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str,
                                    value: str, message: str) -> None:
    contract, _, probs, feat = case
    _actual(tmp_path, probs, feat)
    outcome = run_cli(capsys, *_args(tmp_path, contract, option, value))
    assert (outcome.code, outcome.error_line) == (2, f"error: {message}")
    with pytest.raises(InferError, match=message.replace("+", r"\+")):
        keyword: dict[str, Any] = {option.removeprefix("--"): float(value) if option != "--topk" else int(value)}
        CompareOptions(**keyword)
