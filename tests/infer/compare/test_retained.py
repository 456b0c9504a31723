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


@pytest.mark.slow
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


def test_an_fp16_conversions_constant_outputs_are_watched_in_the_measures_pass(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The constant-output check of a conversion that computes in fp16 read every batch a third time (at fp16's
    resolution, stopping only once both sides vary: a collapsed output, the case it exists for, was read whole);
    now it is watched in pass one. A converted model that lost the input (its outputs the same for every sample,
    TensorFlow's varying): each batch read at most twice (the two passes), the finding the same."""
    from infer.compare._compare import compare
    from infer.compare._sides.run_folders import OutputPair
    from tests.infer.compare.handmade import write_contract

    batches = 12
    contract = write_contract(tmp_path / "model", (TensorSpec("probs:0", "float32", (None, CLASSES)),))
    assert contract.converted is not None and contract.converted.precision_mode == "force_fp16"
    write_dataset(tmp_path / "bins", batch=1, samples=batches)
    golden = np.random.default_rng(0).random((batches, CLASSES), dtype=np.float32)
    write_run(tmp_path / "golden" / "20240101_120000", [golden], 1)
    write_run(tmp_path / "actual" / "20240101_130000", [np.repeat(golden[:1], batches, axis=0)], 1)
    read: list[str] = []
    batches_of = OutputPair.batches

    def counted(self: OutputPair, stems: object = None) -> object:
        for batch in batches_of(self, stems):  # type: ignore[arg-type]  # as the method takes them
            read.append(batch.stem)
            yield batch

    monkeypatch.setattr(OutputPair, "batches", counted)
    result = compare(contract.path, tmp_path / "bins", tmp_path / "actual", golden=tmp_path / "golden")
    assert [(c.name, c.actual, c.golden, c.below_fp16) for c in result.constant_outputs] == [
        ("probs:0", True, False, False)]
    assert len(read) <= 2 * batches and max(read.count(stem) for stem in set(read)) <= 2
