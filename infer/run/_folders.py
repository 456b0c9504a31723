"""The tool path of `infer run` (msame, ais_bench): every input's folder of bins handed to one start of the tool.

The tool writes into a work folder inside the run folder; its outputs are size-checked, all of them, before any
is moved into our layout, so a refused run moves nothing. The timings are the tool's own figures.
"""

from __future__ import annotations

import logging
import os
import shutil
from dataclasses import replace
from pathlib import Path

from binio.binfile import check_bin_size
from binio.dataset import digests_checked_beside
from binio.manifest import DatasetManifest
from binio.spec import TensorSpec
from infer.run._batches import Progress
from infer.run._latency import percentile
from infer.run._preflight import input_for
from infer.run._runners.tool import ToolRunner, ToolTimings
from infer.run.gear_record import GearRecord, TrimmedOutput
from infer.run.layout import output_file_name
from infer.run.record import LatencyStats, RunRecord, now

log = logging.getLogger(__name__)


def _tool_latency(timings: ToolTimings, batches: int) -> LatencyStats:
    """The tool's own figures; where it gave only a mean, that mean stands for every batch."""
    per_batch = timings.per_batch_ms or ((timings.mean_ms,) * batches if timings.mean_ms is not None else ())

    def or_percentile(value: float | None, q: float) -> float | None:
        return value if value is not None or not per_batch else percentile(per_batch, q)

    return LatencyStats(per_batch_ms=tuple(per_batch), mean_ms=timings.mean_ms,
                        p50_ms=or_percentile(timings.p50_ms, 50), p99_ms=or_percentile(timings.p99_ms, 99))


def run_folders(runner: ToolRunner, manifest: DatasetManifest, record: RunRecord,
                progress: Progress | None) -> RunRecord:
    """One tool start for the whole dataset, in a work folder; its outputs moved into our layout once checked."""
    stems = manifest.stems
    if progress is not None:
        progress(0, len(stems))
    work = record.folder / f".{runner.tool}-work"
    dirs = [manifest.root / input_for(manifest, spec).folder for spec in runner.inputs]
    # The tool reads the bins itself: a bin changed after dump-bin but kept at its size passes preflight, so their
    # digests are checked on a thread while it runs, and a refusal leaves the run incomplete.
    with digests_checked_beside(manifest) as inputs_unchanged:
        run = runner.run_folders(dirs, stems, work)
        inputs_unchanged()
    moves = [(path, record.folder / output_file_name(stem, index), spec)
             for stem in stems
             for index, (path, spec) in enumerate(zip(run.files[stem], runner.outputs, strict=True))]
    trimmed = _trim_to_gear(runner, moves)
    for path, _, spec in moves:  # every file checked before any moves: a refused run moves nothing
        check_bin_size(path, spec)
    for path, target, _ in moves:
        os.replace(path, target)
    shutil.rmtree(work, ignore_errors=True)
    if progress is not None:
        progress(len(stems), len(stems))
    timings = run.timings
    throughput = timings.throughput
    if throughput is None and timings.mean_ms:
        throughput = manifest.batch * 1000.0 / timings.mean_ms
    gear = runner.gear
    return replace(record, stems=stems, rows=tuple(e.rows for e in manifest.inputs[0].files),
                   latency=_tool_latency(timings, len(stems)), throughput=throughput, completed=True,
                   tool_command=run.command, finished=now(),
                   remote=runner.place.record() if runner.place is not None else None,
                   gear=None if gear is None else GearRecord(kind=gear.kind, values=gear.gear, label=gear.label,
                                                             flags=gear.flags, trimmed=trimmed)).save()


def _trim_to_gear(runner: ToolRunner, moves: list[tuple[Path, Path, TensorSpec]]) -> tuple[TrimmedOutput, ...]:
    """Each output file the tool wrote larger than the gear's output cut to the gear's size
    (`ToolRunner.trim_to_gear`); what was cut, per output."""
    if runner.gear is None:
        return ()
    cut: dict[str, tuple[int, int, int]] = {}
    for path, _, spec in moves:
        written = runner.trim_to_gear(path, spec)
        if written is not None:
            _, _, files = cut.get(spec.name, (written, 0, 0))
            cut[spec.name] = (written, path.stat().st_size, files + 1)
    if cut:
        log.info("%s wrote outputs padded to its buffer; trimmed to %s's size: %s", runner.tool, runner.gear.label,
                 ", ".join(f"{name} {written} -> {kept} bytes" for name, (written, kept, _) in cut.items()))
    return tuple(TrimmedOutput(output=name, written_bytes=written, kept_bytes=kept, files=files)
                 for name, (written, kept, files) in cut.items())
