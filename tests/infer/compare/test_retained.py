"""What compare keeps per batch (issue 42: memory flat in the batches): at batch 1 a validation set is 50,000
batches, so what a batch leaves behind until the report is written must be a few numbers, not objects. Measured by
tracemalloc over one output's measure (`measure_output`: both passes, the fold, the result) at 200 and 2,000
batches of one sample: the bytes per batch added, at the peak and held by the result; not a time.

The measure alone is traced: the manifest (loaded, its stems derived, before the trace) holds an entry per file
whatever compare does, and pathlib's interned names resize the interpreter's table at moments no test controls."""

from __future__ import annotations

import gc
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from binio.manifest import load_manifest
from binio.spec import TensorSpec
from infer.compare._judge import passes
from infer.compare._judge.passes import Measured, measure_output
from infer.compare._sides.run_folders import batch_spec, output_pairs
from infer.compare.options import CompareOptions
from tests.infer.compare.handmade import write_dataset, write_run

CLASSES = 10


def _measured(root: Path, batches: int) -> tuple[int, int, Measured]:
    """One classifier output over `batches` batches of one sample: the traced peak, what the result holds, it."""
    write_dataset(root / "bins", batch=1, samples=batches)
    golden = np.random.default_rng(0).random((batches, CLASSES), dtype=np.float32)
    write_run(root / "golden", [golden], 1)
    write_run(root / "actual", [golden + np.float32(1e-3) * golden], 1)
    manifest = load_manifest(root / "bins")
    spec = batch_spec(TensorSpec("probs:0", "float32", (None, CLASSES)), 1)
    (pair,) = output_pairs((spec,), (spec,), root / "actual", root / "golden", manifest)
    shards = [frozenset(manifest.stems)]
    options = CompareOptions()
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        measured = measure_output(pair, options.thresholds, options, None, shards)
        gc.collect()
        kept, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak - before, kept - before, measured


def test_what_compare_keeps_per_batch_is_a_few_numbers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before (objects per batch: an accumulator with its moments and counts dict, a Metrics and its counts, the
    failures, four score arrays, two scatter arrays) 1.3 KB a batch held and 2.4 KB at the peak; now numbers in
    flat arrays: 26 numbers of metrics and 4 scores a batch held, 8 more until the fold. The histogram pools up to
    a fixed count of errors before it bins them (bounded, whatever the batches): made small here, so that the
    pool filling up to its bound does not read as growth per batch."""
    monkeypatch.setattr(passes, "_BINNED_AT_ONCE", 1024)
    small_peak, small_kept, small = _measured(tmp_path / "small", 200)
    large_peak, large_kept, large = _measured(tmp_path / "large", 2000)
    added = 2000 - 200
    assert len(large.result.batches) == 2000 and large.result.batches[1999].rows == 1
    assert large.result.passed and small.result.passed and len(large.result.worst_samples) == 10
    kept_per_batch = (large_kept - small_kept) / added
    peak_per_batch = (large_peak - small_peak) / added
    assert kept_per_batch < 400, f"a batch leaves {kept_per_batch:.0f} bytes in the result"
    assert peak_per_batch < 800, f"compare's peak grows {peak_per_batch:.0f} bytes per batch"
