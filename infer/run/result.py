"""What `infer run` did (`RunResult`): the run folder and its record (run.json)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infer.run.record import RunRecord


@dataclass(frozen=True)
class RunResult:
    """What a run did: the run folder and its record (also in run.json)."""

    folder: Path
    record: RunRecord

    def __bool__(self) -> bool:
        return self.record.completed

    def to_json(self) -> dict[str, Any]:
        """`infer run --json`: run.json's document with the folder it lies in (docs/json-output.md)."""
        return {**self.record.to_json(), "folder": str(self.folder)}
