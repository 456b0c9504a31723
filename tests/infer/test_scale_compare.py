"""`infer compare --workers N`: the golden outputs from N TensorFlow processes, identical to one process's."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from binio.manifest import DatasetManifest, load_manifest
from infer.compare._compare import CompareOptions, compare
from infer.compare._sides.golden import tensorflow_golden
from infer.contract import ModelContract
from infer.run import run_model
from infer.run.record import load_run
from tests.cli import run_cli
from tests.infer.scale_data import assert_same_outputs, scale_bins


@pytest.fixture(scope="module")
def bins(tmp_path_factory: pytest.TempPathFactory) -> DatasetManifest:
    return scale_bins(tmp_path_factory.mktemp("compare_scale_bins"))


@pytest.mark.slow
def test_golden_over_two_workers_is_byte_identical_and_so_is_the_comparison(
        onnx_small_cnn: ModelContract, bins: DatasetManifest, tmp_path: Path) -> None:
    manifest = load_manifest(bins.root)
    one, _ = tensorflow_golden(onnx_small_cnn, manifest, cache_root=tmp_path / "one")
    two, source = tensorflow_golden(onnx_small_cnn, manifest, cache_root=tmp_path / "two", workers=2)
    assert source == "tensorflow" and two.parent.parent.parent == tmp_path / "two"
    assert_same_outputs(one, two)
    record = load_run(two)
    assert record.completed and record.scale_out is not None and len(record.scale_out.shards) == 2
    assert tensorflow_golden(onnx_small_cnn, manifest, cache_root=tmp_path / "two", workers=2) == (two, "cache")

    actual = run_model(onnx_small_cnn.path, bins.root, tmp_path / "actual").folder
    single = compare(onnx_small_cnn.path, bins.root, actual, golden=one, options=CompareOptions())
    sharded = compare(onnx_small_cnn.path, bins.root, actual, golden=two, options=CompareOptions(workers=2))
    assert sharded.outputs == single.outputs and sharded.passed


def test_workers_below_one_is_refused(onnx_small_cnn: ModelContract, bins: DatasetManifest, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    outcome = run_cli(capsys, "compare", onnx_small_cnn.path, "--input", bins.root, "--actual", tmp_path,
                      "--workers", "0")
    assert (outcome.code, outcome.error_line) == (2, "error: --workers 0: expected 1 or more")


@pytest.mark.slow
def test_metrics_over_three_workers_equal_one_workers_exactly(
        onnx_small_cnn_fp16: ModelContract, bins: DatasetManifest, tmp_path: Path) -> None:
    """fp16 emulation: every metric non-trivial; labels: top-k accuracy too; 5 batches over 3 workers: 2 + 2 + 1."""
    golden, _ = tensorflow_golden(onnx_small_cnn_fp16, load_manifest(bins.root), cache_root=tmp_path / "cache")
    actual = run_model(onnx_small_cnn_fp16.path, bins.root, tmp_path / "actual").folder
    labels = tmp_path / "labels.txt"
    labels.write_text("".join(f"{i % 5}\n" for i in range(bins.samples)))
    options = CompareOptions(labels=labels, topk=2)
    single = compare(onnx_small_cnn_fp16.path, bins.root, actual, golden=golden, options=options)
    sharded = compare(onnx_small_cnn_fp16.path, bins.root, actual, golden=golden,
                      options=replace(options, workers=3))
    output = single.outputs[0]
    assert output.metrics.max_absolute_error > 0 and output.metrics.kullback_leibler_divergence > 0
    assert output.topk is not None and output.topk.accuracy is not None
    assert sharded.outputs == single.outputs  # every metric, batch, worst sample, plot point: equal, not close
