"""What the driver of a sharded run asks of an engine: submit a shard's task, get a future of its outcome."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Protocol

from binio.errors import InferError
from infer.run._engines.worker import ShardOutcome, ShardTask
from infer.run.options import EngineName


class EngineError(InferError):
    """An engine that cannot start (Ray not installed, a cluster without the resource the shards ask for)."""


class Engine(Protocol):
    name: EngineName

    def default_shards(self) -> int:
        """How many shards to cut when --shards is not given: one per device the engine can run at once."""
        ...

    def slot(self, shard_index: int) -> int | None:
        """The device the shard runs on (None: the engine or the backend chooses)."""
        ...

    def host(self, shard_index: int) -> str:
        """The Ascend host the shard's tool runs on (--host a,b); "" for this machine's, or the engine's."""
        ...

    def submit(self, task: ShardTask) -> Future[ShardOutcome]: ...

    def close(self, *, cancel: bool = False) -> None: ...
