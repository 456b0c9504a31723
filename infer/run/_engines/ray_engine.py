"""Shards as Ray tasks, on one machine or a cluster (``--engine ray [--address ADDR]``).

Each task asks for one unit of the device it needs: ``NPU`` for msame and ais_bench (Ray's name for Ascend
devices; it sets ``ASCEND_RT_VISIBLE_DEVICES`` for the task, so the tool's device 0 is the one granted), CPUs
for the ONNX Runtime stand-in. Bins are read from, and outputs written to, paths every node must see the same
way (a shared file system). Without an address a local Ray instance starts in this process and stops with it
(`infer.ray_cluster`, which compare's golden batches and metrics share).
Ray does not retry here (max_retries=0): the driver retries a failed shard itself, for only the batches missing.
"""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

from infer.ray_cluster import RayError, RaySession
from infer.run._engines.base import EngineError
from infer.run._engines.worker import ShardOutcome, ShardTask, run_shard
from infer.run.options import EngineName

TOOL_BACKENDS = ("msame", "ais_bench")


class RayEngine:
    name: EngineName = "ray"

    def __init__(self, backend: str, *, address: str | None, threads: int | None) -> None:
        try:
            self._session = RaySession(address)
        except RayError as exc:
            raise EngineError(exc.message, hint=exc.hint) from None
        ray = self._session.ray
        self.npu = backend in TOOL_BACKENDS
        self.cpus_per_task = 0 if self.npu else max(1, threads or 1)
        resources = self._session.resources()
        if self.npu and resources.get("NPU", 0) < 1:
            self.close()
            raise EngineError(f"--engine ray: the Ray cluster has no NPU resource; each {backend} shard asks for one",
                              hint="start Ray on the Ascend hosts (it finds the NPUs), or ray start --resources "
                                   "'{\"NPU\": 8}'")
        self._capacity = int(resources.get("NPU", 0)) if self.npu else int(resources.get("CPU", 1) //
                                                                            self.cpus_per_task)
        options: dict[str, Any] = {"max_retries": 0, "num_cpus": self.cpus_per_task}
        if self.npu:
            options["resources"] = {"NPU": 1}
        self._remote = ray.remote(run_shard).options(**options)

    def default_shards(self) -> int:
        return max(1, self._capacity)

    def slot(self, shard_index: int) -> int | None:
        return None  # Ray grants the device

    def host(self, shard_index: int) -> str:
        return ""  # the tasks run on the cluster's nodes, whose tools are their own

    def submit(self, task: ShardTask) -> Future[ShardOutcome]:
        future: Future[ShardOutcome] = self._remote.remote(task).future()
        return future

    def close(self, *, cancel: bool = False) -> None:
        self._session.close()
