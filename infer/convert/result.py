"""What `infer convert` did (`ConvertResult`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from atc_wrap.precision_plan import PrecisionPlan
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
