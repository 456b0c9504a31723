"""What `infer run` did (`RunResult`): the run folder and its record (run.json)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from infer.run.record import RunRecord


@dataclass(frozen=True)
class RunResult:
    """What a run did: the run folder and its record (also in run.json)."""

    folder: Path
    record: RunRecord

    def __bool__(self) -> bool:
        return self.record.completed
