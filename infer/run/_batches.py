"""The in-process loop of `infer run` (ONNX Runtime, TensorFlow): batch by batch, outputs written behind it.

Each output file is written atomically (temporary name, then rename); on an ordinary disk the rename costs about
a millisecond per file, as much as a small model's inference. A single writer thread does it while the next
batch runs (the frameworks and the file system both release the GIL). A batch counts as done, in run.json and
for the progress bar, only once its files are in place, so an interrupted run records exactly the finished ones.
"""

from __future__ import annotations

import os
from array import array
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from binio.binfile import write_raw
from binio.dataset import read_checked
from binio.dtypes import from_numpy
from binio.file_stems import StemList
from binio.manifest import DatasetManifest
from binio.spec import TensorSpec, format_shape
from infer.run._latency import mean, percentile
from infer.run._preflight import input_for
from infer.run._runners.base import BaseRunner, RunnerError
from infer.run.layout import output_file_name
from infer.run.record import LatencyStats, RunRecord, now

Progress = Callable[[int, int], None]
_QUEUE = 2  # batches whose files may still be in flight: bounds memory, keeps the writer busy


def latency_stats(per_batch_ms: Sequence[float], samples_ms: Sequence[float]) -> LatencyStats:
    if not samples_ms:
        return LatencyStats(per_batch_ms=per_batch_ms, mean_ms=None, p50_ms=None, p99_ms=None)
    return LatencyStats(per_batch_ms=per_batch_ms, mean_ms=mean(samples_ms),
                        p50_ms=percentile(samples_ms, 50), p99_ms=percentile(samples_ms, 99))


def _written_spec(spec: TensorSpec, array: np.ndarray, record: RunRecord) -> TensorSpec:
    """What is written for an output: the array's own shape (the contract's may hold unknown dims), after checking
    it against the contract's: a model that returns another dtype or shape than its model.json says is not the
    model the contract describes, and compare would read its outputs as something else."""
    written = TensorSpec(name=spec.name, dtype=from_numpy(array.dtype).name, shape=tuple(array.shape),
                         layout=spec.layout)
    fits = len(spec.shape) == len(written.shape) and all(
        want is None or want == got for want, got in zip(spec.shape, written.shape, strict=False))
    if written.dtype != spec.dtype or not fits:
        raise RunnerError(f"{record.model_path}: output {spec.name} is {written.dtype}{format_shape(written.shape)}, "
                          f"its contract (model.json) says {spec.dtype}{format_shape(spec.shape)}",
                          hint="the model file and its model.json disagree: convert (or freeze) again to write both")
    return written


def _feeds(manifest: DatasetManifest, runner: BaseRunner, index: int) -> dict[str, np.ndarray]:
    """Batch `index` of every input, each file's digest checked on the bytes fed: a bin changed after dump-bin but
    kept at its size passes preflight, and would make the outputs describe another dataset."""
    feeds = {}
    for spec in runner.inputs:
        item = input_for(manifest, spec)
        stored = read_checked(manifest, item, index)
        # preflight let a different dtype through only where the cast is exact (float16 -> float32)
        feeds[spec.name] = stored if item.dtype == spec.dtype else stored.astype(spec.dt.np_dtype)
    return feeds


def _write_outputs(folder: Path, stem: str, results: list[np.ndarray]) -> None:
    for index, result in enumerate(results):  # named by text: no Path (and its interned name) per output
        write_raw(os.path.join(folder, output_file_name(stem, index)), np.asarray(result))


@dataclass
class _Ledger:
    """The batches whose outputs are in place, with their timings."""

    total: int
    progress: Progress | None
    stems: StemList = field(default_factory=StemList)  # a range, where dump-bin named the files
    # 8 bytes a figure, where a list holds a float object of 24 more: 50,000 batches at batch 1
    per_batch_ms: array[float] = field(default_factory=lambda: array("d"))
    samples_ms: array[float] = field(default_factory=lambda: array("d"))
    pending: deque[tuple[str, list[float], Future[None]]] = field(default_factory=deque)

    def settle(self, keep: int) -> None:
        """Books every finished write; waits for the oldest until at most `keep` are in flight."""
        while self.pending and (len(self.pending) > keep or self.pending[0][2].done()):
            stem, times, future = self.pending.popleft()
            future.result()  # a failed write (disk full) surfaces here, as its InferError
            self.book(stem, times)
            if self.progress is not None:
                self.progress(len(self.stems), self.total)

    def settle_quietly(self) -> None:
        """After an interruption: books the writes that finish, drops the ones that failed, calls no one."""
        while self.pending:
            stem, times, future = self.pending.popleft()
            if future.exception() is None:
                self.book(stem, times)

    def book(self, stem: str, times: list[float]) -> None:
        self.stems.append(stem)
        self.per_batch_ms.append(mean(times))
        self.samples_ms.extend(times)


def run_batches(runner: BaseRunner, manifest: DatasetManifest, record: RunRecord, *, loop: int, warmup: int,
                progress: Progress | None) -> RunRecord:
    """Every batch through an active in-process runner; returns the record saved as complete. A bin whose bytes
    are not its manifest's stops the run there, its record incomplete, so compare never takes its outputs."""
    rows = [entry.rows for entry in manifest.inputs[0].files]
    ledger = _Ledger(total=manifest.file_count, progress=progress)
    outputs = record.outputs
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="infer-run-writer") as writer:
        try:
            if warmup:
                first = _feeds(manifest, runner, 0)
                for _ in range(warmup):
                    runner.infer(first)
            for index, stem in enumerate(manifest.stems):
                feeds = _feeds(manifest, runner, index)
                times: list[float] = []
                results: list[np.ndarray] = []
                for _ in range(loop):
                    results = runner.infer(feeds)
                    times.append((runner.last_inference_seconds or 0.0) * 1000.0)
                if len(results) != len(runner.outputs):
                    raise RunnerError(f"{runner.backend} runner returned {len(results)} outputs, the contract "
                                      f"names {len(runner.outputs)}")
                if index == 0:
                    outputs = tuple(_written_spec(s, a, record) for s, a in zip(runner.outputs, results, strict=True))
                ledger.pending.append((stem, times, writer.submit(_write_outputs, record.folder, stem, results)))
                ledger.settle(keep=_QUEUE)
            ledger.settle(keep=0)
        except BaseException:
            ledger.settle_quietly()
            replace(record, outputs=outputs, stems=ledger.stems.frozen(), rows=tuple(rows[: len(ledger.stems)]),
                    latency=latency_stats(ledger.per_batch_ms, ledger.samples_ms), finished=now()).save()
            raise
    total_s = sum(ledger.samples_ms) / 1000.0
    throughput = manifest.batch * len(ledger.samples_ms) / total_s if total_s > 0 else None
    return replace(record, outputs=outputs, stems=ledger.stems.frozen(), rows=tuple(rows), completed=True,
                   latency=latency_stats(ledger.per_batch_ms, ledger.samples_ms), throughput=throughput,
                   finished=now()).save()
