"""`infer compare --engine ray`: TensorFlow's golden batches and the metrics' two passes as Ray tasks on a local Ray,
and the report number for number what one process writes; skipped where Ray is missing."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from binio.manifest import DatasetManifest
from infer.compare._compare import CompareOptions, compare
from infer.compare._reports.folder import write_reports
from infer.contract import ModelContract
from infer.run import run_model
from infer.run.options import ScaleOptions
from infer.run.record import load_run
from tests.infer.scale_data import assert_same_outputs, scale_bins

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def local_ray() -> Iterator[Any]:
    """A local Ray of 2 CPUs, up for the module: compare joins it and leaves it up."""
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield ray
    finally:
        ray.shutdown()


@pytest.fixture(scope="module")
def bins(tmp_path_factory: pytest.TempPathFactory) -> DatasetManifest:
    return scale_bins(tmp_path_factory.mktemp("compare_ray_bins"))


def _report(result: Any, folder: Path) -> dict[str, Any]:
    """report.json as written, less the golden run's folder (each compare has a cache of its own) and the
    provenance (it holds that folder and the time)."""
    import json

    write_reports(result, folder)
    document = json.loads((folder / "report.json").read_text())
    assert Path(document.pop("golden")) == Path(result.golden_dir) and document.pop("provenance")
    return document


def test_golden_and_metrics_on_ray_give_the_single_process_report(
        local_ray: Any, onnx_small_cnn_fp16: ModelContract, bins: DatasetManifest, tmp_path: Path) -> None:
    """fp16 emulation (every metric non-trivial), labels (top-k accuracy), 5 batches in 2 Ray tasks (3 + 2)."""
    actual = run_model(onnx_small_cnn_fp16.path, bins.root, tmp_path / "actual").folder
    labels = tmp_path / "labels.txt"
    labels.write_text("".join(f"{i % 5}\n" for i in range(bins.samples)))
    options = CompareOptions(labels=labels, topk=2)
    single = compare(onnx_small_cnn_fp16.path, bins.root, actual, options=options, cache_root=tmp_path / "one")
    on_ray = compare(onnx_small_cnn_fp16.path, bins.root, actual, cache_root=tmp_path / "ray",
                     options=replace(options, scale=ScaleOptions(engine="ray")))
    assert (single.golden_source, on_ray.golden_source) == ("tensorflow", "tensorflow")
    assert_same_outputs(Path(single.golden_dir), Path(on_ray.golden_dir))  # TF's batches, byte for byte
    scaled = load_run(Path(on_ray.golden_dir)).scale_out
    assert scaled is not None and (scaled.engine, scaled.shard_count) == ("ray", 2)  # one task per CPU
    assert on_ray.outputs == single.outputs  # every metric, batch, worst sample, plot point: equal, not close
    assert on_ray.outputs[0].topk is not None and on_ray.outputs[0].metrics.kullback_leibler_divergence > 0
    assert _report(on_ray, tmp_path / "report-ray") == _report(single, tmp_path / "report-one")
    assert ray.is_initialized()  # compare joined the Ray it found and left it up

    three = compare(onnx_small_cnn_fp16.path, bins.root, actual, cache_root=tmp_path / "ray",
                    options=replace(options, workers=3, scale=ScaleOptions(engine="ray")))
    assert three.golden_source == "cache" and three.outputs == single.outputs  # --workers 3: 3 tasks, 2 + 2 + 1


def test_address_without_ray_engine_is_refused_before_anything_runs(onnx_small_cnn: ModelContract,
                                                                     bins: DatasetManifest, tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    from tests.cli import run_cli

    outcome = run_cli(capsys, "compare", onnx_small_cnn.path, "--input", bins.root, "--actual", tmp_path,
                      "--address", "127.0.0.1:6379")
    assert (outcome.code, outcome.error_line) == (2, "error: --address is for --engine ray")
