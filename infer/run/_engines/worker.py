"""One shard of a sharded run, as a worker executes it: an ordinary `infer run` over the shard's view.

The worker runs `infer.run._plain.run_plain` on its view of the dataset into its own work folder, then moves the output
files into the shared run folder (a rename: same file system). Errors come back as values, not exceptions, so
nothing has to survive pickling across a process pool or Ray, and the batches a failed attempt finished (an
in-process backend books them one by one) are moved too, so a retry runs only what is missing.
"""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path

from binio.errors import InferError, first_line
from binio.shards import Shard
from binio.spec import TensorSpec
from infer.remote.record import RemoteRecord
from infer.run._plain import run_plain
from infer.run.layout import newest_run_folder, output_file_name
from infer.run.options import EngineName, RunOptions
from infer.run.record import RunRecord, load_run


@dataclass(frozen=True)
class ShardTask:
    """Everything a worker needs, as plain picklable values; paths are the same on every node (a shared path)."""

    shard: Shard  # this attempt's batches: the shard's, less those already done
    model: str
    options: RunOptions  # backend chosen by the driver; device left to `slot`
    view: str  # the shard's dataset view, written by the driver
    work: str  # the shard's scratch folder
    run_folder: str  # where the outputs go
    slot: int | None  # the device from --devices; None: the backend's default (Ray assigns NPUs itself)
    engine: EngineName = "local"
    host: str = ""  # the Ascend host of --host a,b the shard runs on; "" for --host's only one, or none


@dataclass(frozen=True)
class ShardOutcome:
    """What an attempt did: the stems whose outputs it moved into the run folder, and why it stopped if it did."""

    index: int
    stems: tuple[str, ...]
    per_batch_ms: tuple[float, ...]  # aligned with stems (empty where the backend gave no per-batch figure)
    outputs: tuple[TensorSpec, ...]
    device: str
    throughput: float | None
    command: tuple[str, ...]
    seconds: float
    error: str = ""  # "" when every batch of the attempt finished
    remote: RemoteRecord | None = None  # where the tool ran (--host) and what was sent


_DRIVER_POLL_S = 0.5


def exit_with_driver(driver: int) -> None:
    """Started in each worker process: ends the worker as soon as the driver process `driver` is gone.

    A pool worker is the driver's child; once the driver dies, however (kill -9 included), the worker is handed to
    another parent, which is what this watch looks for. os._exit: nothing of a driverless shard is worth saving,
    and its outputs move into the run folder only whole.
    """

    def watch() -> None:
        while os.getppid() == driver:
            time.sleep(_DRIVER_POLL_S)
        os._exit(1)

    threading.Thread(target=watch, name="infer-driver-watch", daemon=True).start()


def _device(task: ShardTask) -> int | None:
    """The device index the runner gets: an ONNX Runtime without CUDA runs every slot on the CPU."""
    backend = task.options.backend
    if task.slot is None or backend == "tf":
        return None
    if backend == "onnxrt":
        import onnxruntime as ort

        return task.slot if "CUDAExecutionProvider" in ort.get_available_providers() else None
    return task.slot


def _where(device: str, engine: str) -> str:
    if engine != "ray":
        return device
    visible = os.environ.get("ASCEND_RT_VISIBLE_DEVICES")
    return f"{device} on {socket.gethostname()}" + (f" (ASCEND_RT_VISIBLE_DEVICES={visible})" if visible else "")


def _describe(exc: BaseException) -> str:
    if isinstance(exc, InferError):
        return exc.message + (f" ({exc.hint})" if exc.hint else "")
    first = first_line(exc, default="")
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def _salvage(out: Path) -> RunRecord | None:
    """The record an interrupted or failed run left, listing the batches it finished."""
    try:
        return load_run(newest_run_folder(out))
    except InferError:
        return None


def _move(record: RunRecord, target: Path) -> tuple[str, ...]:
    for stem in record.stems:
        for index in range(len(record.outputs)):
            name = output_file_name(stem, index)
            os.replace(record.folder / name, target / name)
    return tuple(record.stems)  # a shard's, sent back to the driver


def run_shard(task: ShardTask) -> ShardOutcome:
    """Runs one attempt of one shard; never raises for a failed run (the outcome says why)."""
    start = time.perf_counter()
    out = Path(task.work) / "out"
    shutil.rmtree(out, ignore_errors=True)
    error = ""
    record: RunRecord | None
    try:
        options = replace(task.options, device=_device(task))
        if task.host and options.remote is not None:  # this shard's host of --host a,b
            options = replace(options, remote=options.remote.on(task.host))
        record = run_plain(Path(task.model), Path(task.view), out, options).record
    except Exception as exc:  # the driver decides: retry, or name the shard in the final error
        error = _describe(exc)
        record = _salvage(out)
    if record is None:
        return ShardOutcome(index=task.shard.index, stems=(), per_batch_ms=(), outputs=(), device="",
                            throughput=None, command=(), seconds=time.perf_counter() - start, error=error)
    stems = _move(record, Path(task.run_folder))
    per_batch = tuple(record.latency.per_batch_ms) if len(record.latency.per_batch_ms) == len(stems) else ()
    return ShardOutcome(index=task.shard.index, stems=stems, per_batch_ms=per_batch, outputs=record.outputs,
                        device=_where(record.device, task.engine), throughput=record.throughput,
                        command=record.tool_command, seconds=time.perf_counter() - start, error=error,
                        remote=record.remote)
