"""What `infer run` did (`RunResult`): the run folder and its record (run.json); what a dry run would do (`RunPlan`)."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infer.run.options import Backend
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


PLAN_SCHEMA = "infer.run-plan"
PLAN_VERSION = 1


@dataclass(frozen=True)
class RunPlan:
    """What `infer run --dry-run` found it would do, run nothing: the tool's command line per start (msame,
    ais_bench), or for ONNX Runtime and TensorFlow what they would run."""

    backend: Backend
    model: Path
    dataset: Path
    batches: int
    batch: int
    samples: int
    gear: str  # the dataset's gear (``batch 4``), "" for a static model
    inputs: tuple[tuple[str, Path], ...]  # (tensor, folder), in the order the model takes them
    output: Path  # the output root the run would write under
    commands: tuple[tuple[str, ...], ...] = ()  # one argv per tool start; () for an in-process backend
    summary: str = ""  # one line: what runs, on what

    def lines(self) -> tuple[str, ...]:
        """The command lines, each quoted for a POSIX shell (what a user copies to the server)."""
        return tuple(shlex.join(argv) for argv in self.commands)

    def to_json(self) -> dict[str, Any]:
        """`infer run --dry-run --json` (docs/json-output.md)."""
        return {
            "schema": PLAN_SCHEMA, "version": PLAN_VERSION, "dry_run": True, "backend": self.backend,
            "model": str(self.model), "dataset": str(self.dataset), "batches": self.batches, "batch": self.batch,
            "samples": self.samples, "gear": self.gear or None,
            "inputs": [{"tensor": tensor, "folder": str(folder)} for tensor, folder in self.inputs],
            "output": str(self.output), "commands": [list(argv) for argv in self.commands],
            "lines": list(self.lines()), "summary": self.summary,
        }
