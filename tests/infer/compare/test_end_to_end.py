"""Real models end to end: TF golden vs the ONNX stand-in in fp32, in emulated fp16, and with one layer perturbed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from infer.compare._compare import CompareOptions, compare
from infer.compare.metric_names import shown
from infer.contract import ModelContract
from infer.run import run_model
from infer.run.options import RunOptions
from tests.cli import run_cli
from tests.conftest import Copy

pytestmark = pytest.mark.slow

LAYERWISE = CompareOptions(layerwise=True)


def _run_onnx(contract: ModelContract, bins: Path, out: Path) -> Path:
    return run_model(contract.path, bins, out, RunOptions(backend="onnxrt")).folder


def test_fp32_stand_in_passes_with_default_golden_cached(onnx_small_cnn: ModelContract, cnn_bins: Path,
                                                         copy_model: Copy, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    contract = copy_model(onnx_small_cnn)
    actual = _run_onnx(contract, cnn_bins, tmp_path / "out")
    outcome = run_cli(capsys, "compare", contract.path, "--input", cnn_bins, "--actual", actual)
    assert outcome.code == 0, outcome.out + outcome.err
    assert outcome.verdict.split(" | ")[0] == "PASSED"
    result = compare(contract.path, cnn_bins, actual)
    assert result.golden_source == "cache"  # the CLI run computed it; this one reuses it
    metrics = result.outputs[0].metrics
    assert metrics.elements == 5 * 5  # five samples, padding row left out
    assert metrics.cosine_similarity > 0.999999 and metrics.max_absolute_error < 1e-5


def test_fp16_emulation_gives_small_nonzero_errors(onnx_small_cnn_fp16: ModelContract, cnn_bins: Path, cnn_golden: Path,
                                                   tmp_path: Path) -> None:
    actual = _run_onnx(onnx_small_cnn_fp16, cnn_bins, tmp_path / "out")
    result = compare(onnx_small_cnn_fp16.path, cnn_bins, actual, golden=cnn_golden)
    metrics = result.outputs[0].metrics
    assert result.passed
    assert 1e-6 < metrics.max_absolute_error < 1e-2
    assert 0.999 < metrics.cosine_similarity < 1.0
    assert metrics.allclose_pass_rate < 1.0 or metrics.max_absolute_error > 1e-4


def test_fp16_layerwise_every_matched_tensor_close(onnx_small_cnn_fp16: ModelContract, cnn_bins: Path, cnn_golden: Path,
                                                   tmp_path: Path) -> None:
    actual = _run_onnx(onnx_small_cnn_fp16, cnn_bins, tmp_path / "out")
    result = compare(onnx_small_cnn_fp16.path, cnn_bins, actual, golden=cnn_golden, options=LAYERWISE)
    layers = result.layerwise
    assert layers is not None and layers.diverges_at is None
    matched = [row.tensor for row in layers.matched]
    assert matched == ["BiasAdd:0", "conv/relu:0", "pool:0", "head/logits:0", "probs:0"]
    assert all(0 < row.metrics.max_absolute_error < 1e-2 for row in layers.matched if row.metrics)
    assert [row.tensor for row in layers.unmatched] == ["Conv2D:0"]


def test_perturbed_layer_fails_and_layerwise_marks_it_first(perturbed_small_cnn: ModelContract, cnn_bins: Path,
                                                            cnn_golden: Path, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    actual = _run_onnx(perturbed_small_cnn, cnn_bins, tmp_path / "out")
    outcome = run_cli(capsys, "compare", perturbed_small_cnn.path, "--input", cnn_bins, "--actual", actual,
                      "--golden", cnn_golden, "--layerwise", "--dump-golden", tmp_path / "dump",
                      "--report", tmp_path / "report")
    assert outcome.code == 1
    assert outcome.verdict.startswith("FAILED: probs:0 ")
    assert "first tensor to diverge: BiasAdd:0 (BiasAdd)" in outcome.out
    result = compare(perturbed_small_cnn.path, cnn_bins, actual, golden=cnn_golden, options=LAYERWISE)
    assert not result
    layers = result.layerwise
    assert layers is not None and layers.diverges_at is not None
    assert layers.diverges_at.tensor == "BiasAdd:0" and layers.diverges_at.op_type == "BiasAdd"
    assert [row.tensor for row in layers.rows if row.diverges_here] == ["BiasAdd:0"]  # exactly one marked first
    assert layers.origins == ("BiasAdd:0",) and layers.growth_tensor == "BiasAdd:0" and layers.note == ""
    dumped = sorted(p.name.split(".")[0] + "." + p.name.split(".")[1] for p in (tmp_path / "dump").iterdir())
    assert dumped == ["BiasAdd.0", "Conv2D.0", "conv_relu.0", "head_logits.0", "pool.0", "probs.0"]
    relu = next((tmp_path / "dump").glob("conv_relu.0.*.npy"))
    assert np.load(relu).shape == (2, 8, 8, 4)
    html = (tmp_path / "report" / "report.html").read_text()
    assert "first tensor to diverge: <span class='fail'>BiasAdd:0</span>" in html
    csv_text = (tmp_path / "report" / "report.csv").read_text()
    assert "Conv2D:output:0" in csv_text and "not in the ONNX model" in csv_text
    assert any(line.split(",")[5] == "BiasAdd" and "first to diverge" in line for line in csv_text.splitlines())


def test_fp32_layerwise_marks_nothing(onnx_small_cnn: ModelContract, cnn_bins: Path, cnn_golden: Path,
                                      tmp_path: Path) -> None:
    actual = _run_onnx(onnx_small_cnn, cnn_bins, tmp_path / "out")
    result = compare(onnx_small_cnn.path, cnn_bins, actual, golden=cnn_golden, options=LAYERWISE)
    assert result.passed and result.layerwise is not None and result.layerwise.diverges_at is None
    assert all(row.metrics.max_absolute_error < 1e-5 for row in result.layerwise.matched if row.metrics)


def test_layerwise_refuses_an_unconverted_model(frozen_small_cnn: ModelContract, cnn_bins: Path, cnn_golden: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    outcome = run_cli(capsys, "compare", frozen_small_cnn.path, "--input", cnn_bins, "--actual", cnn_golden,
                      "--golden", cnn_golden, "--layerwise", "--allow-same-backend")
    assert outcome.code == 2
    assert outcome.error_line == (f"error: --layerwise: {frozen_small_cnn.path} is not converted; layer-by-layer "
                                  "comparison runs the ONNX stand-in")


def test_dump_golden_alone_needs_no_converted_model(frozen_small_cnn: ModelContract, cnn_bins: Path, cnn_golden: Path,
                                                    tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    outcome = run_cli(capsys, "compare", frozen_small_cnn.path, "--input", cnn_bins, "--actual", cnn_golden,
                      "--golden", cnn_golden, "--dump-golden", tmp_path / "dump", "--allow-same-backend")
    assert outcome.code == 0 and outcome.verdict.split(" | ")[0] == "PASSED"
    names = sorted(p.name for p in (tmp_path / "dump").iterdir())
    assert len(names) == 6 and all(n.endswith(".npy") and len(n.split(".")) == 4 for n in names)
    assert len({n.split(".")[2] for n in names}) == 1  # one timestamp for the whole dump


def test_outputs_of_another_dataset_are_refused(onnx_small_cnn: ModelContract, cnn_bins: Path, cnn_golden: Path,
                                                tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.infer.compare.conftest import write_image_bins

    other = write_image_bins(tmp_path / "other", seed=7)
    actual = _run_onnx(onnx_small_cnn, other, tmp_path / "out")
    outcome = run_cli(capsys, "compare", onnx_small_cnn.path, "--input", cnn_bins, "--actual", actual,
                      "--golden", cnn_golden)
    assert outcome.error_line == (f"error: --actual {actual}: run on the dataset {other}, whose dataset.json differs "
                                  f"from {cnn_bins / 'dataset.json'}")


def test_fp16_overflow_is_flagged_and_located(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """sqrt(Σx²)/16 with |x| ≈ 300: x² passes 65504, so emulated fp16 gives inf where TensorFlow does not."""
    from binio.binfile import write_bin
    from binio.manifest import BinEntry, DatasetManifest, InputManifest, bin_file_name
    from infer.convert._convert import ConvertOptions, convert_model
    from tests.builders.frozen import write_frozen
    from tests.builders.graphs import build_energy

    frozen = write_frozen(tmp_path / "energy", build_energy, ("x:0",), ("energy:0",))
    contract = convert_model(frozen, ConvertOptions(target="onnx", precision_mode="force_fp16")).contract
    rng = np.random.default_rng(0)
    files = []
    for index in range(2):
        values = rng.uniform(250, 350, size=(2, 64)).astype(np.float32)
        files.append(BinEntry(bin_file_name(index), write_bin(tmp_path / "bins" / "x" / bin_file_name(index), values),
                              2))
    DatasetManifest(root=tmp_path / "bins", batch=2, samples=4,
                    inputs=(InputManifest("x:0", "x", "float32", (2, 64), "ND", tuple(files)),)).save()
    actual = _run_onnx(contract, tmp_path / "bins", tmp_path / "out")
    outcome = run_cli(capsys, "compare", contract.path, "--input", tmp_path / "bins", "--actual", actual,
                      "--layerwise")
    assert outcome.code == 1
    assert outcome.verdict.startswith("FAILED: fp16 overflow (or underflow) inside the network; energy:0 "
                                      "CosineSimilarity NaN")  # the outputs alone say so
    result = compare(contract.path, tmp_path / "bins", actual, options=LAYERWISE)
    counts = result.outputs[0].metrics.counts
    assert counts.fp16_overflow and counts.inf_actual == 4 and counts.nonfinite_actual_where_golden_finite == 4
    assert result.layerwise is not None and result.layerwise.diverges_at is not None
    assert result.layerwise.diverges_at.tensor == "Square:0"
    finding = result.layerwise.nonfinite
    assert finding is not None and (finding.tensor, finding.cause) == ("Square:0", "overflow")
    assert "first inf/NaN: Square:0 (Square): " in outcome.out and "overflow" in outcome.out


def test_failed_run_without_a_mark_says_why(onnx_small_cnn_fp16: ModelContract, cnn_bins: Path, cnn_golden: Path,
                                            tmp_path: Path) -> None:
    """An absolute limit the outputs break is no divergence of a layer: no mark, and the reason instead."""
    from infer.compare.thresholds import Thresholds

    actual = _run_onnx(onnx_small_cnn_fp16, cnn_bins, tmp_path / "out")
    result = compare(onnx_small_cnn_fp16.path, cnn_bins, actual, golden=cnn_golden,
                     options=CompareOptions(thresholds=Thresholds.parse(["rmse=1e-9"]), layerwise=True))
    assert not result.passed and result.layerwise is not None and result.layerwise.diverges_at is None
    assert result.layerwise.note == ("no tensor marked: probs:0 fails only on RootMeanSquareError, which the "
                                     "layer-wise view does not judge (it uses CosineSimilarity, "
                                     "RelativeEuclideanDistance, measures that do not depend on scale)")


@pytest.mark.parametrize("width", [80, 120])
def test_layer_table_fits_the_terminal_through_the_cli(perturbed_small_cnn: ModelContract, cnn_bins: Path,
                                                       cnn_golden: Path, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str],
                                                       monkeypatch: pytest.MonkeyPatch, width: int) -> None:
    from infer.cli.layer_table import layer_table

    actual = _run_onnx(perturbed_small_cnn, cnn_bins, tmp_path / "out")
    monkeypatch.setenv("FORCE_COLOR", "1")  # rich takes stdout for a terminal of COLUMNS columns
    monkeypatch.setenv("COLUMNS", str(width))
    outcome = run_cli(capsys, "compare", perturbed_small_cnn.path, "--input", cnn_bins, "--actual", actual,
                      "--golden", cnn_golden, "--layerwise")
    lines = outcome.out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("layer by layer, batch "))
    end = next(i for i, line in enumerate(lines) if line.startswith("first tensor to diverge: "))
    table = lines[start:end]
    assert all(len(line) <= width for line in table), "\n".join(table)
    result = compare(perturbed_small_cnn.path, cnn_bins, actual, golden=cnn_golden, options=LAYERWISE)
    assert result.layerwise is not None
    assert table == layer_table(result.layerwise, width)
    words = {word for line in table for word in line.split()}
    for row in result.layerwise.matched:
        assert row.metrics is not None
        assert shown(row.metrics.cosine_similarity, "CosineSimilarity") in words
        assert shown(row.metrics.relative_euclidean_distance) in words


def test_dump_golden_into_a_folder_holding_files_needs_force(frozen_small_cnn: ModelContract, cnn_bins: Path,
                                                             cnn_golden: Path, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    dump = tmp_path / "dump"
    dump.mkdir()
    (dump / "notes.txt").write_text("mine")
    args = ("compare", frozen_small_cnn.path, "--input", cnn_bins, "--actual", cnn_golden, "--golden", cnn_golden,
            "--dump-golden", dump, "--allow-same-backend")
    outcome = run_cli(capsys, *args)
    assert (outcome.code, outcome.error_line, outcome.out) == (2, f"error: {dump}: exists already", "")
    assert sorted(p.name for p in dump.iterdir()) == ["notes.txt"]
    outcome = run_cli(capsys, *args, "--force")
    assert outcome.code == 0, outcome.err
    names = sorted(p.name for p in dump.iterdir())
    assert len(names) == 7 and "notes.txt" in names and not (dump / ".infer.lock").exists()
