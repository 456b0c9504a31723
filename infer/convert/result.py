"""What `infer convert` did (`ConvertResult`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from atc_wrap.precision.plan import PrecisionPlan
from infer.contract import ModelContract


@dataclass(frozen=True)
class ConvertResult:
    """The contract as saved after conversion (as it was, for a dry run) and how the target was chosen."""

    contract: ModelContract
    target: str
    artefact: Path
    target_reason: str  # one plain line: why this target
    command: tuple[str, ...] = ()  # the ATC argv; () for the stand-in
    dry_run: bool = False
    ignored: tuple[str, ...] = ()  # options that mean nothing to the chosen target
    notes: tuple[str, ...] = ()  # given options that change nothing here, and why (--keep-dtype under fp32)
    seconds: float = 0.0
    aipp_file: Path | None = None  # the aipp.cfg written (or, for a dry run, that would be)
    plan: PrecisionPlan | None = None  # each op's dtype on the chip (None: a chip without an operator table)
    findings: tuple[str, ...] = ()  # the plan's summary and the pre-check's findings, a line each
    used_om: Path | None = None  # --use-om: the om built elsewhere that was recorded (before any copy)
    copied: bool = False  # --use-om: the om was copied into the model folder (`artefact` is the copy)

    def to_json(self) -> dict[str, Any]:
        """`infer convert --json` (docs/json-output.md): what was converted how, and model.json as saved (as it
        was, for a dry run)."""
        return {
            "schema": "infer.convert-result", "version": 1, "target": self.target, "target_reason": self.target_reason,
            "dry_run": self.dry_run, "artefact": str(self.artefact), "command": list(self.command),
            "seconds": round(self.seconds, 3), "ignored": list(self.ignored), "notes": list(self.notes),
            "findings": list(self.findings), "aipp_file": None if self.aipp_file is None else str(self.aipp_file),
            "used_om": None if self.used_om is None else str(self.used_om), "copied": self.copied,
            "contract": self.contract.to_json(),
        }
