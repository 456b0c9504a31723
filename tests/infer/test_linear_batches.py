"""Every stage's work grows linearly with the number of batches (issue 42: compare was quadratic, 332 s for 5,000
batches where run took 3.8 s). Measured by structure, not by time: the Python function calls a stage makes (the
profiler's count, the same on any machine and under any load) at 16, 32 and 64 batches; the calls each added batch
costs must not grow with the dataset. A walk of the dataset per batch shows as that cost doubling. Every stage
runs once on a dataset of 4 batches first: the calls of its first imports are not a batch's."""

from __future__ import annotations

import cProfile
import json
import os
import pstats
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from binio.manifest import DatasetManifest, load_manifest
from infer.bin_info import BinInfoOptions, describe_path
from infer.compare import CompareOptions, compare_outputs, tensorflow_golden
from infer.contract import ModelContract
from infer.dump_bin import DumpOptions, dump_bins
from infer.pipeline._digests import DigestCache, digest_path
from infer.run import run_model
from infer.run.layout import RUN_JSON, output_file_name
from infer.run.options import RunOptions, ScaleOptions

pytestmark = pytest.mark.slow

SIZES = (16, 32, 64)  # batches of 2 samples of the small CNN


def _calls(work: Callable[[], Any]) -> int:
    profile = cProfile.Profile()
    profile.enable()
    try:
        work()
    finally:
        profile.disable()
    return int(pstats.Stats(profile).total_calls)  # type: ignore[attr-defined]


def _assert_linear(stage: str, counts: dict[int, int]) -> None:
    """The calls the second doubling adds per batch are at most the first's (plus a little: dicts and lists grow
    their storage in steps). A per-batch walk of N batches adds N calls per batch, and doubles it."""
    small, middle, large = (counts[n] for n in SIZES)
    first = (middle - small) / (SIZES[1] - SIZES[0])
    second = (large - middle) / (SIZES[2] - SIZES[1])
    assert second <= first * 1.05 + 5, f"{stage}: {first:.0f} calls per added batch, then {second:.0f}: {counts}"


@pytest.fixture(scope="module")
def datasets(onnx_small_cnn: ModelContract, tmp_path_factory: pytest.TempPathFactory
             ) -> tuple[Path, dict[str, dict[int, int]]]:
    """Each stage's calls at each size, every stage run on the same datasets in pipeline order; and their folder."""
    root = tmp_path_factory.mktemp("linear")
    counts: dict[str, dict[int, int]] = {}
    _stages(onnx_small_cnn, root / "warm-up", 4)
    for size in SIZES:
        for stage, calls in _stages(onnx_small_cnn, root / str(size), size).items():
            counts.setdefault(stage, {})[size] = calls
    return root, counts


def _stages(contract: ModelContract, folder: Path, size: int) -> dict[str, int]:
    counts: dict[str, int] = {}

    def count(stage: str, work: Callable[[], Any]) -> Any:
        kept: list[Any] = []
        counts[stage] = _calls(lambda: kept.append(work()))
        return kept[0]

    folder.mkdir()
    np.save(folder / "x.npy", np.random.default_rng(size).standard_normal((2 * size, 8, 8, 3)).astype(np.float32))
    options = DumpOptions(output=folder / "bins", sources=(("", str(folder / "x.npy")),))
    manifest: DatasetManifest = count("dump-bin", lambda: dump_bins(contract, options)).manifest
    count("bin-info --verify", lambda: describe_path(folder / "bins", BinInfoOptions(verify=True)))
    run = count("run", lambda: run_model(contract, folder / "bins", folder / "out"))
    tensorflow_golden(contract, load_manifest(manifest.root), cache_root=folder / "cache")  # compare's own cost
    count("compare", lambda: compare_outputs(contract, folder / "bins", run.folder, cache_root=folder / "cache",
                                             options=CompareOptions(expected_from_emulation=False)))
    _as_interrupted(run.folder, manifest)
    count("run --resume", lambda: run_model(contract, folder / "bins", folder / "out", RunOptions(),
                                            ScaleOptions(resume=True)))
    images = _aged_files(folder / "images", size)
    cache = DigestCache()
    digest_path(images, cache)
    count("pipeline re-run", lambda: digest_path(images, cache))
    return counts


def _as_interrupted(folder: Path, manifest: DatasetManifest) -> None:
    """The run folder as a run stopped before its last batch leaves it."""
    record = json.loads((folder / RUN_JSON).read_text())
    record.update(completed=False, stems=record["stems"][:-1], rows=record["rows"][:-1])
    (folder / RUN_JSON).write_text(json.dumps(record))
    (folder / output_file_name(manifest.stems[-1], 0)).unlink()


def _aged_files(folder: Path, count: int) -> Path:
    """A pipeline's data source: `count` files whose digests a state file recorded a minute after they were made."""
    folder.mkdir()
    old = time.time() - 60
    for index in range(count):
        path = folder / f"{index:05d}.png"
        path.write_bytes(bytes([index % 256]) * 100)
        os.utime(path, (old, old))
    return folder


@pytest.mark.parametrize("stage", ["dump-bin", "bin-info --verify", "run", "compare", "run --resume",
                                   "pipeline re-run"])
def test_each_batch_costs_the_same_however_many_there_are(datasets: tuple[Path, dict[str, dict[int, int]]],
                                                          stage: str) -> None:
    _assert_linear(stage, datasets[1][stage])


def test_the_measure_is_one_that_sees_a_walk_per_batch(onnx_small_cnn: ModelContract,
                                                        datasets: tuple[Path, dict[str, dict[int, int]]],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The guard can fail: with the manifest's stems rebuilt on every access again (as before issue 42) and a
    stem's place found by walking them, compare breaks it."""
    import binio.manifest
    from binio.file_stems import FileStems

    def rebuilt(self: DatasetManifest) -> FileStems:
        return FileStems(Path(f.name).stem for f in self.inputs[0].files) if self.inputs else FileStems()

    def walked(self: FileStems, stem: str) -> int | None:
        return next((k for k, held in enumerate(self) if held == stem), None)

    monkeypatch.setattr(binio.manifest.DatasetManifest, "stems", property(rebuilt))
    monkeypatch.setattr(FileStems, "place", walked)
    root, _ = datasets
    counts = {size: _compare_calls(onnx_small_cnn, root / str(size)) for size in SIZES}
    with pytest.raises(AssertionError, match="compare: "):
        _assert_linear("compare", counts)


def _compare_calls(contract: ModelContract, folder: Path) -> int:
    out = next((folder / "out").iterdir())
    return _calls(lambda: compare_outputs(contract, folder / "bins", out, cache_root=folder / "cache",
                                          options=CompareOptions(expected_from_emulation=False)))
