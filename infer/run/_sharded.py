"""`infer run` over shards: the dataset's batches split across devices (``--devices``) or Ray tasks, one layout.

The driver checks everything a plain run checks before anything starts (model, backend, every bin, the tool being
installed), creates the run folder, cuts the batches into contiguous shards (`infer.run._shard`), gives each a view of
the dataset, and hands the shards to an engine. Workers run ordinary `infer run`s and move their outputs into the
run folder, so the folder holds exactly what a single run writes, byte for byte, plus a ``scale_out`` part in
run.json (per shard: batches, device, throughput, attempts). run.json is rewritten as each shard finishes.

A failed shard is retried (``--retries``) for only the batches it did not finish. A run that still fails raises,
naming the shards, and keeps every finished batch; ``--resume`` re-runs into the newest matching unfinished run
folder and does only the batches whose output files are not all there with their expected sizes.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, field, replace
from pathlib import Path

from binio.binfile import sha256_file
from binio.lock import folder_lock
from binio.manifest import DatasetManifest
from binio.shards import Shard, split, write_view
from binio.spec import TensorSpec
from infer.contract import ModelContract
from infer.remote import RemoteRecord, held_connections, merged_remote
from infer.run._batches import Progress, latency_stats
from infer.run._engines.base import Engine
from infer.run._engines.local import LocalEngine
from infer.run._engines.ray_engine import RayEngine
from infer.run._engines.worker import ShardOutcome, ShardTask
from infer.run._plain import RunResult, make_run_folder, prepare_run
from infer.run._shard import finished_stems
from infer.run._sharded_record import ScaleOut, ShardStats
from infer.run.layout import RUN_JSON, parse_timestamp_folder
from infer.run.options import Backend, RunOptions, ScaleOptions, ScaleOutError
from infer.run.record import RunRecord, RunRecordError, load_run, now

log = logging.getLogger(__name__)
WORK_FOLDER = ".infer-shards"


def _open_engine(backend: Backend, options: RunOptions, scale: ScaleOptions) -> Engine:
    if scale.engine == "ray":
        return RayEngine(backend, address=scale.address, threads=options.threads)

    devices: tuple[int | None, ...] = scale.devices or ((options.device,) if options.device is not None else ())
    hosts = options.remote.host if options.remote is not None and len(options.remote.host) > 1 else ()
    return LocalEngine(backend, devices, hosts)


def _previous_run(out: Path, backend: Backend, model_sha: str, dataset_sha: str) -> RunRecord | None:
    """The newest run under `out` of this backend, model and dataset (complete or not), for --resume."""
    if not out.is_dir():
        return None
    folders = sorted(((when, p) for p in out.iterdir() if p.is_dir() and (when := parse_timestamp_folder(p.name))
                      and (p / RUN_JSON).is_file()), reverse=True)
    for _, folder in folders:
        try:
            record = load_run(folder)
        except RunRecordError:
            continue
        if (record.backend, record.model_sha256, record.dataset_sha256) == (backend, model_sha, dataset_sha):
            return record
    return None


@dataclass
class _Book:
    """What the shards have done so far: batches in place, their latency, per-shard figures, failures."""

    manifest: DatasetManifest
    outputs: tuple[TensorSpec, ...] | None
    done: set[str] = field(default_factory=set)
    latency: dict[str, float] = field(default_factory=dict)
    stats: dict[int, ShardStats] = field(default_factory=dict)
    failed: dict[int, str] = field(default_factory=dict)
    position: dict[str, int] = field(default_factory=dict)  # a stem's place in the dataset
    remote: RemoteRecord | None = None  # the hosts' (--host): the first shard's record, every shard's traffic

    def __post_init__(self) -> None:
        self.position = {stem: index for index, stem in enumerate(self.manifest.stems)}

    def book(self, shard: Shard, attempt: int, outcome: ShardOutcome) -> str:
        """Takes in an outcome's batches; returns why it must count as failed ("" if it need not)."""
        if outcome.stems and self.outputs is not None and outcome.outputs != self.outputs:
            return (f"wrote outputs {', '.join(s.describe() for s in outcome.outputs)}, other shards "
                    f"{', '.join(s.describe() for s in self.outputs)}")
        if outcome.stems and self.outputs is None:
            self.outputs = outcome.outputs
        self.done.update(outcome.stems)
        self.remote = merged_remote(self.remote, outcome.remote)
        self.latency.update(zip(outcome.stems, outcome.per_batch_ms, strict=False))
        before = self.stats.get(shard.index)
        shard_done = set(outcome.stems).union(before.stems if before else ())
        stems = tuple(sorted(shard_done, key=self.position.__getitem__))
        self.stats[shard.index] = ShardStats(
            index=shard.index, stems=stems, device=outcome.device or (before.device if before else ""),
            samples=len(stems) * self.manifest.batch,
            throughput=outcome.throughput if outcome.throughput is not None else (before.throughput if before
                                                                                  else None),
            seconds=outcome.seconds + (before.seconds if before else 0.0), attempts=attempt,
            command=outcome.command or (before.command if before else ()))
        return outcome.error

    def stems(self) -> tuple[str, ...]:
        return tuple(sorted(self.done, key=self.position.__getitem__))


def run_sharded(model: ModelContract | Path | str, bins: DatasetManifest | Path | str, out: Path | str,
                options: RunOptions,
                scale: ScaleOptions, *, progress: Progress | None = None) -> RunResult:
    """Runs every batch of `bins` through `model` in shards; the run folder is that of a plain run."""
    options.check()
    scale.check(options)
    prepared = prepare_run(model, bins, options)  # the model, the backend, every bin (and its gear) checked
    contract, backend, runner, manifest, running = (prepared.contract, prepared.backend, prepared.runner,
                                                    prepared.manifest, prepared.running)
    opened = contract.path if isinstance(model, ModelContract) else Path(model)  # what the workers open
    runner.check_available()  # a missing msame is refused before any folder or worker exists
    checked = _Checked(model=opened, backend=backend, running=running, manifest=manifest,
                       dataset_sha256=sha256_file(manifest.path), outputs=runner.outputs)
    out = Path(out)
    with folder_lock(out, command="run"):
        previous = _previous_run(out, backend, checked.running[1], checked.dataset_sha256) if scale.resume else None
        if previous is not None and previous.completed:
            log.info("%s: already complete; nothing to resume", previous.folder)
            return RunResult(folder=previous.folder, record=previous)
        engine = _open_engine(backend, options, scale)
        try:
            with held_connections(options.remote):  # one connection per host, shared by its shards
                return ShardedRun(checked, engine, options, scale, out=out, previous=previous).drive(progress)
        finally:
            engine.close()


@dataclass(frozen=True)
class _Checked:
    """What the driver checked before taking the lock: the model, its backend, and every bin of the dataset."""

    model: Path  # as the workers open it
    backend: Backend
    running: tuple[Path, str]  # the file the backend runs, with its sha256
    manifest: DatasetManifest
    dataset_sha256: str
    outputs: tuple[TensorSpec, ...]  # the runner's specs, until a shard reports what it wrote


def _worker_threads(options: RunOptions, backend: Backend, engine: Engine, shard_count: int) -> int | None:
    """Intra-op threads per worker: what was asked for, else a share of the cores for ONNX Runtime."""
    threads = options.threads
    # ONNX Runtime's threads spin: workers that each take every core slow each other down, so they share them.
    # Its CPU kernels split work by output element, never along a sum, so the thread count changes no result bit.
    # TensorFlow (Eigen) may split a contraction along its sum, so its workers keep the default a plain run has.
    if threads is None and backend == "onnxrt" and engine.name == "local" and shard_count > 1:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        threads = max(1, cores // min(shard_count, engine.default_shards()))
    if threads is None and backend == "onnxrt" and engine.name == "ray":
        threads = 1  # what each task asked Ray for
    return threads


class ShardedRun:
    """One sharded run while the driver drives it: the shards on their engine, the book of what they did, and
    run.json, rewritten as each attempt finishes.

    A new run gets a new run folder; a resumed one (`previous`) goes on in its folder, counting the batches whose
    outputs are all there as done.
    """

    def __init__(self, checked: _Checked, engine: Engine, options: RunOptions, scale: ScaleOptions, *, out: Path,
                 previous: RunRecord | None) -> None:
        manifest = checked.manifest
        self.checked = checked
        self.engine = engine
        self.retries = scale.retries
        self.shards = split(manifest.stems, scale.shards or engine.default_shards())
        # bins_made_for: run_sharded warned once, naming the user's dataset, if its bins were made for another model;
        # the shards take them on purpose, and would warn once each, naming their views.
        self.task_options = replace(options, backend=checked.backend, device=None,
                                    threads=_worker_threads(options, checked.backend, engine, len(self.shards)),
                                    bins_made_for=checked.manifest.model_sha256)
        if previous is not None:
            self.folder = previous.folder
            outputs: tuple[TensorSpec, ...] | None = previous.outputs if previous.outputs and all(
                s.is_static for s in previous.outputs) else None
            done = finished_stems(self.folder, manifest.stems, outputs or ())
            log.info("resuming %s: %d of %d batches already done", self.folder, len(done), manifest.file_count)
        else:
            self.folder, outputs, done = make_run_folder(out), None, ()
        self.resumed = len(done)
        self.book = _Book(manifest=manifest, outputs=outputs, done=set(done))
        if previous is not None:
            self.book.latency.update(zip(previous.stems, previous.latency.per_batch_ms, strict=False))
        self.base = RunRecord.begin(self.folder, backend=checked.backend, model=checked.running, manifest=manifest,
                                    dataset_sha256=checked.dataset_sha256, outputs=outputs or checked.outputs,
                                    options=self.task_options, device=f"{engine.name} engine",
                                    started=previous.started if previous is not None else None)
        self.work = self.folder / WORK_FOLDER
        self.pending: dict[Future[ShardOutcome], tuple[Shard, int]] = {}
        self.start = time.perf_counter()

    def drive(self, progress: Progress | None) -> RunResult:
        """Every shard's missing batches through the engine, failed attempts retried; raises, keeping what
        finished, when a shard still fails."""
        total = self.checked.manifest.file_count
        self.save(completed=False)
        if progress is not None:
            progress(len(self.book.done), total)
        try:
            for shard in self.shards:
                todo = tuple(s for s in shard.stems if s not in self.book.done)
                if todo:
                    self.submit(replace(shard, stems=todo), 1)
            while self.pending:
                finished, _ = wait(self.pending, return_when=FIRST_COMPLETED)
                for future in finished:
                    self.settle(future)
                    if progress is not None:
                        progress(len(self.book.done), total)
                self.save(completed=False)
        except BaseException:
            self.engine.close(cancel=True)
            self.save(completed=False)
            raise
        return self.finish()

    def submit(self, shard: Shard, attempt: int) -> None:
        """One attempt at `shard`'s batches, on a view of the dataset that holds only them."""
        shard_work = self.work / f"shard-{shard.index:03d}"
        view = write_view(self.checked.manifest, shard.stems, shard_work / "bins")
        task = ShardTask(shard=shard, model=str(self.checked.model.resolve()), options=self.task_options,
                         view=str(view.root), work=str(shard_work), run_folder=str(self.folder),
                         slot=self.engine.slot(shard.index), engine=self.engine.name,
                         host=self.engine.host(shard.index))
        self.pending[self.engine.submit(task)] = (shard, attempt)

    def settle(self, future: Future[ShardOutcome]) -> None:
        """Books a finished attempt; a failed one goes again for its missing batches, or, out of retries, is
        named as failed."""
        shard, attempt = self.pending.pop(future)
        try:
            outcome = future.result()
        except Exception as exc:  # the worker process died (or Ray lost it): nothing of it is in place
            outcome = ShardOutcome(index=shard.index, stems=(), per_batch_ms=(), outputs=(), device="",
                                   throughput=None, command=(), seconds=0.0,
                                   error=f"its worker died ({type(exc).__name__}: {exc})".splitlines()[0])
        error = self.book.book(shard, attempt, outcome)
        if not error:
            return
        missing = tuple(s for s in shard.stems if s not in self.book.done)
        if attempt <= self.retries and missing:
            log.warning("%s failed (%s); attempt %d of %d for its %d missing batches", shard.describe(), error,
                        attempt + 1, self.retries + 1, len(missing))
            self.submit(replace(shard, stems=missing), attempt + 1)
        else:
            self.book.failed[shard.index] = f"{self.shards[shard.index].describe()}: {error}"

    def scale_out(self) -> ScaleOut:
        book = self.book
        ran = sum(len(s.stems) for s in book.stats.values())
        seconds = time.perf_counter() - self.start
        return ScaleOut(engine=self.engine.name, shard_count=len(self.shards),
                        shards=tuple(book.stats[i] for i in sorted(book.stats)),
                        failed=tuple(book.failed[i] for i in sorted(book.failed)), wall_seconds=seconds,
                        wall_throughput=ran * self.checked.manifest.batch / seconds if ran and seconds > 0 else None,
                        resumed_stems=self.resumed)

    def save(self, *, completed: bool) -> RunRecord:
        """run.json as the book stands: the batches in place, their latency, the shards' figures."""
        book, base, scale_out = self.book, self.base, self.scale_out()
        manifest = book.manifest
        rows_of = {stem: entry.rows for stem, entry in zip(manifest.stems, manifest.inputs[0].files, strict=True)}
        stems = book.stems()
        per_batch = [book.latency[s] for s in stems if s in book.latency]
        rates = [s.throughput for s in scale_out.shards if s.throughput is not None]
        devices = list(dict.fromkeys(s.device for s in scale_out.shards if s.device))
        first_command = next((s.command for s in scale_out.shards if s.command), ())
        return replace(base, outputs=book.outputs or base.outputs, stems=stems, rows=tuple(rows_of[s] for s in stems),
                       remote=self._remote(),
                       latency=latency_stats(per_batch, per_batch), throughput=sum(rates) if rates else None,
                       completed=completed, device=", ".join(devices) or base.device, tool_command=first_command,
                       finished=now(), scale_out=scale_out).save()

    def _remote(self) -> RemoteRecord | None:
        """The shards' hosts' record, its hosts in --host's order (the book has them in the order shards ended)."""
        remote, asked = self.book.remote, self.task_options.remote
        if remote is None or asked is None:
            return remote
        ran = remote.host.split(", ")
        return replace(remote, host=", ".join(host for host in asked.host if host in ran) or remote.host)

    def finish(self) -> RunResult:
        """The final record; a run with a failed shard or a missing batch raises, naming the shards."""
        book = self.book
        complete = not book.failed and len(book.done) == self.checked.manifest.file_count
        record = self.save(completed=complete)
        if not complete:
            names = ", ".join(self.shards[i].describe() for i in sorted(book.failed))
            first = book.failed[min(book.failed)] if book.failed else "batches missing"
            raise ScaleOutError(f"{self.folder}: {len(book.failed)} of {len(self.shards)} shards failed ({names}) "
                                f"after {self.retries + 1} attempt(s) each; {first}",
                                hint=f"the {len(book.done)} finished batches are kept; re-run with --resume to run "
                                     "only the missing ones")
        shutil.rmtree(self.work, ignore_errors=True)
        return RunResult(folder=self.folder, record=record)
