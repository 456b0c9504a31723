"""Shards on this machine: one executor per device slot, each running one shard at a time.

msame and ais_bench are processes of their own, so their shards run from threads of this process. The in-process
backends (ONNX Runtime, TensorFlow) get one worker process per slot, started by spawn: fork is unsafe once
TensorFlow or ONNX Runtime threads exist in this process, and each worker loads its own session. A worker that
dies breaks only its slot's executor, which is started again for the retry. A worker whose driver dies (even by
kill -9, which runs no clean-up) ends itself: a pool worker would otherwise finish its shard and idle forever.
"""

from __future__ import annotations

import functools
import multiprocessing
import os
import threading
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from binio.process import stop_running_tools, stops_tools_with
from infer.run._engines.worker import ShardOutcome, ShardTask, exit_with_driver, run_shard
from infer.run.options import EngineName

IN_PROCESS_BACKENDS = ("onnxrt", "tf")


class LocalEngine:
    name: EngineName = "local"

    def __init__(self, backend: str, devices: tuple[int | None, ...], hosts: tuple[str, ...] = ()) -> None:
        # Each slot a device of a host: --devices on every host of --host (this machine's when none is given).
        self.places = [(host, device) for host in hosts or ("",) for device in devices or (None,)]
        self.devices = tuple(device for _, device in self.places)
        # One slot needs no process of its own: the run happens in a thread of this one, as a plain run does.
        self.processes = backend in IN_PROCESS_BACKENDS and len(self.devices) > 1
        self._executors: dict[int, Executor] = {}
        self._stopped = threading.Event()  # set on a cancel: the shards' threads start no tool after it

    def default_shards(self) -> int:
        return len(self.devices)

    def slot(self, shard_index: int) -> int | None:
        return self.devices[shard_index % len(self.devices)]

    def host(self, shard_index: int) -> str:
        return self.places[shard_index % len(self.places)][0]

    def _executor(self, position: int, *, fresh: bool = False) -> Executor:
        executor = self._executors.get(position)
        if executor is None or fresh:
            if executor is not None:
                executor.shutdown(wait=False, cancel_futures=True)
            if self.processes:
                executor = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"),
                                               initializer=exit_with_driver, initargs=(os.getpid(),))
            else:
                executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"infer-shard-slot{position}")
            self._executors[position] = executor
        return executor

    def submit(self, task: ShardTask) -> Future[ShardOutcome]:
        position = task.shard.index % len(self.devices)
        work = run_shard if self.processes else functools.partial(_run_shard_stoppable, self._stopped)
        try:
            return self._executor(position).submit(work, task)
        except BrokenProcessPool:  # its worker died in an earlier attempt: a new one for this slot
            return self._executor(position, fresh=True).submit(work, task)

    def close(self, *, cancel: bool = False) -> None:
        if cancel and not self.processes:  # msame/ais_bench of the shards' threads: stopped, not waited for
            self._stopped.set()
            stop_running_tools("the sharded run was stopped")
        for executor in self._executors.values():
            executor.shutdown(wait=not cancel, cancel_futures=cancel)
        self._executors.clear()


def _run_shard_stoppable(stopped: threading.Event, task: ShardTask) -> ShardOutcome:
    """A shard on a thread of this process, whose tool is not started once the run is stopped."""
    with stops_tools_with(stopped):
        return run_shard(task)
