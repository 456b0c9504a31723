"""Where each pipeline stage writes, what it plans to read and what it made: the types the stages and the library
calls behind them share (kept apart so neither imports the other)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class WorkLayout:
    """Where each stage writes, inside the pipeline's work folder; a gear's dump, run and compare (a model
    converted with gears) write into folders of its own: ``bins_b4``, ``out_b4``, ``report_b4``."""

    root: Path
    gear: str = ""  # the gear's tag (binio.gears.gear_tag); "" for a model without gears

    def _per_gear(self, name: str) -> Path:
        return self.root / (f"{name}_{self.gear}" if self.gear else name)

    @property
    def model_dir(self) -> Path:
        return self.root / "model"

    @property
    def contract(self) -> Path:
        return self.model_dir / "model.json"

    @property
    def pb(self) -> Path:
        return self.model_dir / "model.pb"

    @property
    def bins(self) -> Path:
        return self._per_gear("bins")

    @property
    def out(self) -> Path:
        return self._per_gear("out")

    @property
    def report(self) -> Path:
        return self._per_gear("report")

    @property
    def golden_cache(self) -> Path:
        return self.root / "golden"


@dataclass(frozen=True)
class StagePlan:
    """What a stage will read and with which settings: enough to tell whether it must run again."""

    stage: str
    inputs: tuple[Path, ...]
    settings: dict[str, Any]
    command: tuple[str, ...]  # the equivalent `infer ...` argv


@dataclass(frozen=True)
class StageDone:
    """What a stage that ran made: its one line, the files to watch, and facts for later stages."""

    summary: str
    outputs: tuple[Path, ...]
    facts: dict[str, Any] = field(default_factory=dict)


Facts = Mapping[str, Mapping[str, Any]]  # stage -> the facts it recorded
