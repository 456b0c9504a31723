"""The ``scale_out`` part of run.json: how a sharded run was split, and what each shard did.

Throughput has two readings here. Each shard's ``throughput`` is what its device computed while busy (samples per
second of inference, as a single run reports it), and the run's total is their sum. ``wall_throughput`` divides
all samples by the wall-clock time of the whole sharded phase, process and tool starts included: what a user
waits for.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from infer.run.options import ENGINES, EngineName


@dataclass(frozen=True)
class ShardStats:
    """One shard: its batches, where it ran, how fast, in how many attempts."""

    index: int
    stems: tuple[str, ...]
    device: str
    samples: int  # padding rows included, as throughput counts them
    throughput: float | None  # samples/s while the device computed
    seconds: float  # wall clock of its successful attempt
    attempts: int
    command: tuple[str, ...] = ()  # the tool's argv (msame, ais_bench)

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "first": self.stems[0] if self.stems else None,
                "last": self.stems[-1] if self.stems else None, "batches": len(self.stems), "device": self.device,
                "samples": self.samples, "throughput_samples_per_s": self.throughput, "seconds": self.seconds,
                "attempts": self.attempts, "command": list(self.command), "stems": list(self.stems)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ShardStats:
        throughput = data.get("throughput_samples_per_s")
        return cls(index=int(data["index"]), stems=tuple(str(s) for s in data.get("stems", [])),
                   device=str(data.get("device", "")), samples=int(data.get("samples", 0)),
                   throughput=None if throughput is None else float(throughput),
                   seconds=float(data.get("seconds", 0.0)), attempts=int(data.get("attempts", 1)),
                   command=tuple(str(a) for a in data.get("command", [])))


@dataclass(frozen=True)
class ScaleOut:
    """A sharded run: the engine, the shards that finished and the ones that failed (named, with why)."""

    engine: EngineName
    shard_count: int
    shards: tuple[ShardStats, ...]  # those that ran, by index, with the batches they finished
    failed: tuple[str, ...]  # "shard 2 (batches 000004-000005): why", for the ones that did not finish
    wall_seconds: float
    wall_throughput: float | None
    resumed_stems: int = 0  # batches a resumed run found already done and did not run again

    def to_json(self) -> dict[str, Any]:
        return {"engine": self.engine, "shard_count": self.shard_count, "shards": [s.to_json() for s in self.shards],
                "failed": list(self.failed), "wall_seconds": self.wall_seconds,
                "wall_throughput_samples_per_s": self.wall_throughput, "resumed_batches": self.resumed_stems}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ScaleOut:
        wall = data.get("wall_throughput_samples_per_s")
        engine = data.get("engine")
        if engine not in ENGINES:
            raise ValueError(f"engine {engine!r}: expected one of {', '.join(ENGINES)}")
        return cls(engine=cast(EngineName, engine), shard_count=int(data.get("shard_count", 0)),
                   shards=tuple(ShardStats.from_json(s) for s in data.get("shards", [])),
                   failed=tuple(str(f) for f in data.get("failed", [])),
                   wall_seconds=float(data.get("wall_seconds", 0.0)),
                   wall_throughput=None if wall is None else float(wall),
                   resumed_stems=int(data.get("resumed_batches", 0)))
