"""What the verdict sees beyond the aggregate, and what the reports say they compared (run folders written by hand)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from binio.binfile import sha256_file
from binio.spec import TensorSpec
from infer.cli.compare_table import metrics_table
from infer.compare._compare import CompareOptions, compare
from infer.compare._reports.report_html import distances, histogram_bars, worst_bars
from infer.compare.metric_names import shown
from infer.compare.thresholds import ThresholdError, Thresholds, parse_threshold
from infer.contract import ModelContract
from tests.cli import Arg, run_cli
from tests.infer.compare.handmade import write_contract, write_dataset, write_run

BATCH, SAMPLES = 4, 40
NAMES = [f"img_{i}.png" for i in range(1, SAMPLES + 1)]  # natural order: img_2.png before img_10.png


def _case(tmp_path: Path, *, names: list[str] | None = NAMES, classes: int = 5) -> tuple[ModelContract, np.ndarray]:
    contract = write_contract(tmp_path / "model", (TensorSpec("probs:0", "float32", (None, classes)),))
    write_dataset(tmp_path / "bins", batch=BATCH, samples=SAMPLES, names=names)
    rng = np.random.default_rng(0)
    probs = rng.random((SAMPLES, classes)).astype(np.float32) + 0.5
    write_run(tmp_path / "golden" / "20240101_120000", [probs], BATCH)
    return contract, probs


def _args(tmp_path: Path, contract: ModelContract, *extra: Arg) -> list[Arg]:
    return ["compare", str(contract.path), "--input", str(tmp_path / "bins"), "--actual", str(tmp_path / "actual"),
            "--golden", str(tmp_path / "golden"), *extra]


def _one_bad_sample(tmp_path: Path) -> tuple[ModelContract, np.ndarray]:
    """Sample 17 (img_18.png) off by 0.4 in two classes: its cosine ~0.97, the dataset's still ~0.999."""
    contract, probs = _case(tmp_path)
    actual = probs.copy()
    actual[17, 0] += 0.4
    actual[17, 1] -= 0.4
    write_run(tmp_path / "actual" / "20240101_130000", [actual], BATCH)
    return contract, actual


# --- point 4: per-sample truth ----------------------------------------------------------------------------------


def test_one_bad_sample_is_named_and_counted_inside_a_passing_aggregate(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    contract, _ = _one_bad_sample(tmp_path)
    result = compare(contract.path, tmp_path / "bins", tmp_path / "actual", golden=tmp_path / "golden")
    output = result.outputs[0]
    assert output.passed and output.metrics.cosine_similarity > 0.99  # msit's rule: PASSED
    assert output.failing_samples == (17,)
    worst = output.worst_samples[0]
    assert (worst.sample, worst.source) == (17, "img_18.png") and worst.cosine_similarity < 0.99
    assert result.worst_sample is not None and result.worst_sample[1] == worst
    assert result.samples_failing == 1
    outcome = run_cli(capsys, *_args(tmp_path, contract))
    assert outcome.code == 0
    last = outcome.verdict
    assert last.startswith("PASSED | ")
    assert (f"| worst sample 17 (img_18.png): probs:0 cosine {shown(worst.cosine_similarity, 'CosineSimilarity')}, "
            f"max |diff| {shown(worst.max_absolute_error)}; 1 of 40 samples fail on their own") in last
    assert "probs:0: 1 of 40 samples fail on their own" in outcome.out
    row = next(line for line in outcome.out.splitlines() if line.startswith("probs:0 "))
    assert row.split()[-1] == "pass"  # counted, not asked to fail the run


@pytest.mark.slow
def test_a_per_sample_threshold_fails_the_run_on_one_sample(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    contract, _ = _one_bad_sample(tmp_path)
    outcome = run_cli(capsys, *_args(tmp_path, contract, "--threshold", "sample:cosine=0.99", "--report",
                                     tmp_path / "report"))
    assert outcome.code == 1
    last = outcome.verdict
    assert re.match(r"FAILED: probs:0 sample 17 \(img_18\.png\) CosineSimilarity 0\.9\d+ < 0\.99 \(1 of 40 samples "
                    r"fail on their own\) \| golden: ", last), last
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    assert report["passed"] is False and report["per_sample_fails_run"] is True
    assert report["samples_failing_on_their_own"] == 1
    assert report["worst_sample"]["sample"] == 17 and report["worst_sample"]["source"] == "img_18.png"
    assert report["outputs"][0]["failing_samples"] == [17]
    # The output passes msit's rule but fails the run: the tables' result column says the run's word.
    assert report["outputs"][0]["passed"] is True and report["outputs"][0]["passes_run"] is False
    row = next(line for line in outcome.out.splitlines() if line.startswith("probs:0 "))
    assert row.split()[-1] == "FAIL"
    page = (tmp_path / "report" / "report.html").read_text()
    assert '<span class="fail">FAIL</span>' in page and '<span class="pass">pass</span>' not in page
    import csv

    rows = list(csv.reader((tmp_path / "report" / "report.csv").read_text().splitlines()))
    assert rows[1][2] == "probs" and rows[1][-1].startswith("probs:0 sample 17 (img_18.png) CosineSimilarity 0.9")
    # A per-sample limit loose enough for the sample passes again; the count follows the limits.
    outcome = run_cli(capsys, *_args(tmp_path, contract, "--threshold", "sample:cosine=0.9", "-t", "sample:red=0.5"))
    assert outcome.code == 0 and "0 of 40 samples fail on their own" in outcome.out


def test_per_sample_threshold_parsing() -> None:
    setting = parse_threshold("sample:cosine=0.99")
    assert (setting.per_sample, setting.output, setting.metric, setting.limit) == (True, None, "CosineSimilarity", 0.99)
    setting = parse_threshold("sample:probs:0:max_abs=0.1")
    assert (setting.per_sample, setting.output, setting.metric) == (True, "probs:0", "MaxAbsoluteError")
    setting = parse_threshold("sample:0:kl=0.1")  # an output whose node is named `sample`
    assert (setting.per_sample, setting.output) == (False, "sample:0")
    with pytest.raises(ThresholdError, match="KullbackLeiblerDivergence is not measured per sample"):
        parse_threshold("sample:kl=0.1")
    thresholds = Thresholds.parse(["sample:cosine=0.999", "red=0.1", "sample:rmse=off"])
    assert thresholds.per_sample_asked and not Thresholds.parse(["cosine=0.9"]).per_sample_asked
    assert thresholds.limits("y:0") == {"CosineSimilarity": 0.99, "RelativeEuclideanDistance": 0.1,
                                        "KullbackLeiblerDivergence": 0.005, "RootMeanSquareError": 1.0,
                                        "MeanRelativeError": 1.0}
    assert thresholds.sample_limits("y:0") == {"CosineSimilarity": 0.999, "RelativeEuclideanDistance": 0.1}


def test_worst_sample_ties_go_to_the_larger_error_then_to_dataset_order(tmp_path: Path) -> None:
    """Samples 3 and 9 point exactly the other way (cosine -1 both), 9 twice as far: 9 ranks first. Samples 20
    and 30 are equal in both keys: dataset order. Sample 25 has one all-zero side (NaN cosine): worse than any."""
    contract, probs = _case(tmp_path)
    actual = probs.copy()
    probs[9] = probs[3]  # the same golden numbers; the actual side scaled by a power of two: the same cosine, bit
    actual[3] = -probs[3]  # for bit, and twice the error
    actual[9] = -2 * probs[3]
    probs[30] = actual[30] = probs[20]  # sample 30: the same numbers as sample 20 on both sides
    actual[20, 0] = actual[30, 0] = -probs[20, 0]
    actual[25] = 0.0
    write_run(tmp_path / "golden" / "20240101_120000", [probs], BATCH)
    write_run(tmp_path / "actual" / "20240101_130000", [actual], BATCH)
    result = compare(contract.path, tmp_path / "bins", tmp_path / "actual", golden=tmp_path / "golden",
                     options=CompareOptions(worst_samples=5))
    worst = result.outputs[0].worst_samples
    assert worst[1].cosine_similarity == worst[2].cosine_similarity == pytest.approx(-1.0)
    assert [s.sample for s in worst] == [25, 9, 3, 20, 30]
    assert worst[1].max_absolute_error > worst[2].max_absolute_error
    assert worst[3].cosine_similarity == worst[4].cosine_similarity
    assert worst[3].max_absolute_error == worst[4].max_absolute_error


# --- point 1: what was compared ---------------------------------------------------------------------------------


@pytest.mark.slow
def test_reports_record_what_was_compared(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    contract, _ = _one_bad_sample(tmp_path)
    outcome = run_cli(capsys, *_args(tmp_path, contract, "-t", "probs:0:red=0.2", "--report", tmp_path / "report"))
    assert outcome.code == 0
    dataset_sha = sha256_file(tmp_path / "bins" / "dataset.json")
    last = outcome.verdict
    assert last.startswith(f"PASSED | golden: unrecorded backend model.pb (00000000, no run.json) | actual: "
                           f"unrecorded backend model.onnx force_fp16 (11111111, no run.json) | 40 samples, dataset "
                           f"{dataset_sha[:8]} | worst sample 17 (img_18.png)")
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    provenance = report["provenance"]
    assert provenance["infer_version"] and re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$", provenance["date"])
    assert provenance["pb_sha256"] == "0" * 64 and provenance["converted_sha256"] == "1" * 64
    assert provenance["precision_mode"] == "force_fp16" and provenance["dataset_sha256"] == dataset_sha
    assert provenance["golden"]["run_folder"].endswith("golden/20240101_120000")
    assert provenance["thresholds"]["probs:0"]["RelativeEuclideanDistance"] == 0.2
    assert provenance["sample_thresholds"]["probs:0"] == {"CosineSimilarity": 0.99, "RelativeEuclideanDistance": 0.2,
                                                          "RootMeanSquareError": 1.0}
    (order,) = provenance["sample_order"]
    assert order["order"].startswith("natural") and order["names"] == NAMES
    assert report["verdict_line"] == last
    sidecar = json.loads((tmp_path / "report" / "report.provenance.json").read_text())
    assert sidecar["describes"] == "report.csv" and sidecar["provenance"]["dataset_sha256"] == dataset_sha
    assert sidecar["verdict_line"] == last
    page = (tmp_path / "report" / "report.html").read_text()
    for text in (dataset_sha, "0" * 64, "1" * 64, "force_fp16", provenance["infer_version"], provenance["date"],
                 "RelativeEuclideanDistance 0.2", "img_1.png, img_2.png, img_3.png, img_4.png, img_5.png, ..., "
                 "img_40.png (40 files)", "natural (numbers in names compared as numbers) order"):
        assert text in page, text
    assert "sample order: x:0 from " in outcome.out
    assert "img_1.png, img_2.png, img_3.png, ..., img_40.png (40 files)" in outcome.out


def test_a_model_never_converted_is_refused_unless_asked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    contract = write_contract(tmp_path / "model", (TensorSpec("probs:0", "float32", (None, 5)),))
    from dataclasses import replace

    contract = replace(contract, converted=None).save()
    write_dataset(tmp_path / "bins", batch=BATCH, samples=8)
    probs = np.ones((8, 5), np.float32)
    write_run(tmp_path / "golden" / "20240101_120000", [probs], BATCH)
    write_run(tmp_path / "actual" / "20240101_130000", [probs], BATCH)
    outcome = run_cli(capsys, *_args(tmp_path, contract))
    assert outcome.code == 2
    assert outcome.error_line == (f"error: {contract.path}: the model was never converted, so --actual "
                                  f"{tmp_path / 'actual' / '20240101_130000'} holds outputs of the frozen graph, as "
                                  "the golden side does; the comparison would prove nothing about a conversion")
    outcome = run_cli(capsys, *_args(tmp_path, contract, "--allow-same-backend"))
    assert outcome.code == 0 and outcome.verdict.startswith("PASSED | ")
    outcome = run_cli(capsys, *_args(tmp_path, contract, "--allow-same-backend", "--expected-from-emulation"))
    assert outcome.error_line == (f"error: --expected-from-emulation: {contract.path} is not converted; there is no "
                                  "precision mode to emulate")


@pytest.mark.parametrize(("flags", "message"), [
    (("--expected-factor", "0.5"), "error: --expected-factor 0.5: expected 1 or more"),
    (("--expected-factor", "nan"), "error: --expected-factor nan: expected 1 or more"),
    (("--fail-on-expected", "--no-expected-from-emulation"),
     "error: --fail-on-expected with --no-expected-from-emulation: the band it fails on would not be computed"),
])
def test_expected_band_options_that_cannot_work_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                            flags: tuple[str, ...], message: str) -> None:
    contract = write_contract(tmp_path / "model", (TensorSpec("probs:0", "float32", (None, 5)),))
    write_dataset(tmp_path / "bins", batch=BATCH, samples=8)
    probs = np.ones((8, 5), np.float32)
    write_run(tmp_path / "golden" / "20240101_120000", [probs], BATCH)
    write_run(tmp_path / "actual" / "20240101_130000", [probs], BATCH)
    outcome = run_cli(capsys, *_args(tmp_path, contract, *flags))
    assert (outcome.code, outcome.error_line) == (2, message)


# --- point 5: labels that belong to the samples -----------------------------------------------------------------


def test_named_labels_are_matched_by_name_not_by_position(tmp_path: Path) -> None:
    """The labels file lists the images sorted as text (img_1, img_10, img_11, ...), the dataset holds them in
    natural order: read by position, most labels would land on a neighbour's sample."""
    contract, probs = _case(tmp_path)
    write_run(tmp_path / "actual" / "20240101_130000", [probs], BATCH)
    truth = {name: int(np.argmax(row)) for name, row in zip(NAMES, probs, strict=True)}
    (tmp_path / "labels.txt").write_text("".join(f"photos/{name} {truth[name]}\n" for name in sorted(NAMES)))
    result = compare(contract.path, tmp_path / "bins", tmp_path / "actual", golden=tmp_path / "golden",
                     options=CompareOptions(labels=tmp_path / "labels.txt"))
    topk = result.outputs[0].topk
    assert topk is not None
    accuracy = topk.accuracy
    assert accuracy is not None and accuracy.golden_top1 == 1.0 and accuracy.actual_top1 == 1.0
    # Names without the extension match too.
    (tmp_path / "stems.txt").write_text("".join(f"{name[:-4]} {truth[name]}\n" for name in reversed(NAMES)))
    result = compare(contract.path, tmp_path / "bins", tmp_path / "actual", golden=tmp_path / "golden",
                     options=CompareOptions(labels=tmp_path / "stems.txt"))
    topk = result.outputs[0].topk
    assert topk is not None and topk.accuracy is not None and topk.accuracy.golden_top1 == 1.0
    # Bare labels are taken by position, in the dataset's (natural) order.
    (tmp_path / "bare.txt").write_text("".join(f"{truth[name]}\n" for name in NAMES))
    result = compare(contract.path, tmp_path / "bins", tmp_path / "actual", golden=tmp_path / "golden",
                     options=CompareOptions(labels=tmp_path / "bare.txt"))
    topk = result.outputs[0].topk
    assert topk is not None and topk.accuracy is not None and topk.accuracy.golden_top1 == 1.0


@pytest.mark.parametrize(("lines", "message"), [
    (lambda t: [f"{n} {t[n]}" for n in NAMES[:-1]], "no label for 1 sample: img_40.png"),
    (lambda t: [f"{n} {t[n]}" for n in NAMES] + ["cat.png 1", "dog.png 2"],
     "2 labels for no sample of the dataset: cat.png, dog.png"),
    (lambda t: [f"{n} {t[n]}" for n in NAMES] + ["img_3.png 1"],
     "labels.txt:41: a second label for sample 2 (img_3.png); the first is on line 3"),
    (lambda t: ["img_1.png 1", "2"], "labels.txt:2: a bare label after `name label` lines (line 1)"),
])
def test_named_labels_that_do_not_fit_are_refused_by_name(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          lines: Callable[[dict[str, int]], list[str]],
                                                          message: str) -> None:
    contract, probs = _case(tmp_path)
    write_run(tmp_path / "actual" / "20240101_130000", [probs], BATCH)
    truth = {name: int(np.argmax(row)) for name, row in zip(NAMES, probs, strict=True)}
    (tmp_path / "labels.txt").write_text("\n".join(lines(truth)) + "\n")
    outcome = run_cli(capsys, *_args(tmp_path, contract, "--labels", tmp_path / "labels.txt"))
    assert outcome.code == 2
    assert outcome.error_line.startswith("error: " + str(tmp_path / "labels.txt"))
    assert outcome.error_line.endswith(message), outcome.error_line


def test_named_labels_for_samples_without_names_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    contract, probs = _case(tmp_path, names=None)
    write_run(tmp_path / "actual" / "20240101_130000", [probs], BATCH)
    (tmp_path / "labels.txt").write_text("".join(f"img{i}.jpg 1\n" for i in range(SAMPLES)))
    outcome = run_cli(capsys, *_args(tmp_path, contract, "--labels", tmp_path / "labels.txt"))
    assert outcome.error_line == (f"error: {tmp_path / 'labels.txt'}: labels are given by name ('img0.jpg', ...), but "
                                  "the dataset's samples have no file names (its source is an array, not a folder "
                                  "of files)")


# --- point 6: readable where people read it ---------------------------------------------------------------------


@pytest.mark.parametrize("width", [80, 120])
def test_terminal_table_fits_the_width_and_cuts_no_number(tmp_path: Path, width: int) -> None:
    contract = write_contract(tmp_path / "model", (TensorSpec("bert/encoder/layer_11/output/LayerNorm/add:0",
                                                              "float32", (None, 5)),
                                                   TensorSpec("probs:0", "float32", (None, 5))))
    write_dataset(tmp_path / "bins", batch=BATCH, samples=8)
    rng = np.random.default_rng(1)
    golden = [rng.normal(size=(8, 5)).astype(np.float32) for _ in range(2)]
    write_run(tmp_path / "golden" / "20240101_120000", golden, BATCH)
    write_run(tmp_path / "actual" / "20240101_130000", [g + np.float32(1.234567e-3) * g for g in golden], BATCH)
    result = compare(contract.path, tmp_path / "bins", tmp_path / "actual", golden=tmp_path / "golden")
    lines = metrics_table(result, width)
    assert all(len(line) <= width for line in lines), "\n".join(lines)
    text = "\n".join(lines)
    for output in result.outputs:
        assert output.name in text
        m = output.metrics
        for name in ("CosineSimilarity", "RelativeEuclideanDistance", "KullbackLeiblerDivergence",
                     "RootMeanSquareError", "MeanRelativeError", "MaxAbsoluteError", "AllclosePassRate"):
            assert re.search(rf"(^|\s){re.escape(shown(m.value(name), name))}(\s|$)", text, re.M), name
    whole = metrics_table(result, None)
    assert len(whole) == 4 and max(len(line) for line in whole) > 120  # one row per output when nothing limits it
    assert (lines == whole) is False  # narrower than the table: one block per output


def test_error_histogram_fits_the_data_and_has_an_exact_bar(tmp_path: Path) -> None:
    contract = write_contract(tmp_path / "model", (TensorSpec("y:0", "float64", (None, 5)),))
    write_dataset(tmp_path / "bins", batch=BATCH, samples=8)
    golden = np.ones((8, 5), np.float64)
    actual = golden.copy()
    actual[0] += 1e-14  # below 1e-12: exact
    actual[1] += 3e-3
    actual[2] += 2e7  # far past the old fixed range (1e6)
    write_run(tmp_path / "golden" / "20240101_120000", [golden], BATCH)
    write_run(tmp_path / "actual" / "20240101_130000", [actual], BATCH)
    result = compare(contract.path, tmp_path / "bins", tmp_path / "actual", golden=tmp_path / "golden")
    plot = result.outputs[0].plot
    assert plot.exact_count == 8 * 5 - 10
    edges, counts, exact = histogram_bars(plot)
    assert sum(counts) == 10 and counts[0] > 0 and counts[-1] > 0  # the drawn range starts and ends with data
    assert edges[0] <= np.log10(3e-3) < edges[1] and edges[-2] <= np.log10(2e7) < edges[-1]
    assert exact[1] < edges[0]


def test_worst_samples_chart_draws_the_metric_it_ranks_by(tmp_path: Path) -> None:
    contract, probs = _case(tmp_path)
    actual = probs.copy()
    actual[5] *= 100.0  # a huge error at cosine 1: ranked last by cosine, it must not draw the longest bar
    actual[7, 0] += 0.3
    actual[11, 1] += 0.6
    write_run(tmp_path / "actual" / "20240101_130000", [actual], BATCH)
    result = compare(contract.path, tmp_path / "bins", tmp_path / "actual", golden=tmp_path / "golden",
                     options=CompareOptions(worst_samples=3))
    output = result.outputs[0]
    labels, lengths, defined = worst_bars(output)
    assert labels[:2] == ("11", "7") and all(defined)
    assert list(lengths) == sorted(lengths, reverse=True)
    assert lengths == tuple(1.0 - s.cosine_similarity for s in output.worst_samples)


@pytest.mark.slow
@pytest.mark.parametrize(("width", "layout"), [(80, "blocks"), (120, "table")])
def test_compare_prints_its_table_for_the_terminals_width(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          monkeypatch: pytest.MonkeyPatch, width: int,
                                                          layout: str) -> None:
    contract, probs = _case(tmp_path)
    write_run(tmp_path / "actual" / "20240101_130000", [probs * np.float32(1.001)], BATCH)
    monkeypatch.setenv("FORCE_COLOR", "1")  # rich takes stdout for a terminal of COLUMNS columns
    monkeypatch.setenv("COLUMNS", str(width))
    outcome = run_cli(capsys, *_args(tmp_path, contract))
    assert outcome.code == 0, outcome.err
    lines = outcome.out.splitlines()
    start = lines.index("40 samples, 0 padding rows left out")
    table = lines[start + 1:lines.index(next(line for line in lines if line.startswith("probs:0: top-1")))]
    assert table and all(len(line) <= width for line in table), "\n".join(table)
    assert (table[0].split()[:3] == ["output", "cosine", "RED"]) == (layout == "table")
    assert (table[0] == "probs:0") == (layout == "blocks")
    result = compare(contract.path, tmp_path / "bins", tmp_path / "actual", golden=tmp_path / "golden")
    assert "\n".join(table) == "\n".join(metrics_table(result, width)[1:])


def test_cosine_is_plotted_as_its_distance_on_a_log_axis() -> None:
    """1 - cosine, so no offset notation ("1e-8+1") is needed; an exact batch sits on the floor, NaN stays NaN."""
    import math

    plotted = distances([1.0, 0.999, math.nan, 1.0 + 1e-16])
    assert plotted[0] == plotted[3] == 1e-16 and abs(plotted[1] - 0.001) < 1e-12 and math.isnan(plotted[2])


def test_the_per_batch_plot_draws_the_worst_of_each_run_of_batches_past_its_cap() -> None:
    """50,000 batches are not 50,000 markers (40 MB of paths at compare's peak): the worst of each run is drawn, so a
    failing batch still stands out; a run holding a NaN is marked."""
    import math

    from infer.compare._reports.report_html import per_batch_points

    few = per_batch_points([0.1, math.nan, 0.3], most=10)
    assert (few.xs, few.nan_xs, few.per_point) == ((0, 1, 2), (1,), 1) and math.isnan(few.ys[1])
    values = [1e-6] * 50_000
    values[31_337], values[40_000] = 0.5, math.nan
    many = per_batch_points(values, most=2000)
    assert many.per_point == 25 and len(many.xs) == 2000 and many.xs[:2] == (0, 25)
    assert many.ys[31_337 // 25] == 0.5 and max(many.ys) == 0.5 and many.nan_xs == (40_000,)
    assert per_batch_points([math.nan] * 4, most=2).nan_xs == (0, 2)
