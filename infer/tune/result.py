"""What `infer tune-precision` found (`TuneResult`), as tune.json writes it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from infer.tune._ops import TunableOp
from infer.tune._suspects import Suspect
from infer.tune._trial import Candidate


@dataclass(frozen=True)
class TuneResult:
    found: bool
    reason: str  # why not found ("" when found)
    ops: tuple[TunableOp, ...]  # the final set, graph order
    tunable: tuple[TunableOp, ...]  # every op the search could choose from
    suspects: tuple[Suspect, ...]
    before: Candidate  # the precision mode as it is, on the whole dataset
    after: Candidate | None  # the final set, on the whole dataset
    candidates: tuple[Candidate, ...]
    mode: str
    precision_mode: str
    seconds: float
    output: Path
    atc_command: tuple[str, ...] = ()
    grown: int = 0  # ops in the set before the shrink step: what a linear search walks to, one op at a time
    chip: str = ""  # the chip whose operator table planned every candidate
    unkeepable: tuple[TunableOp, ...] = ()  # fp16 ops the chip has no fp32 kernel for: left out of the search
    # op -> the TF nodes tf2onnx merged into its ONNX node (equal twins): the stand-in computes them once, ATC each
    twins: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return self.found

    @property
    def keep_dtype(self) -> tuple[str, ...]:
        """The names keep_dtype.cfg holds: each op of the set, then its twins (ATC converts every one of them)."""
        return tuple(dict.fromkeys(name for op in self.ops for name in (op.name, *self.twins.get(op.name, ()))))

    @property
    def total_flops(self) -> int:
        return sum(op.flops for op in self.tunable)

    @property
    def total_params(self) -> int:
        return sum(op.params for op in self.tunable)

    def share(self, op: TunableOp) -> tuple[float, float]:
        """The op's share of the model's FLOPs and of its parameters (0 when the model has none)."""
        return (op.flops / self.total_flops if self.total_flops else 0.0,
                op.params / self.total_params if self.total_params else 0.0)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": "infer.tune-precision", "version": 1, "found": self.found, "reason": self.reason,
            "precision_mode": self.precision_mode, "mode": self.mode, "seconds": round(self.seconds, 3),
            "keep_dtype": list(self.keep_dtype),
            "ops": [{**op.to_json(), "flops_share": self.share(op)[0], "params_share": self.share(op)[1]}
                    for op in self.ops],
            "verdict_before": self.before.verdict, "verdict_after": self.after.verdict if self.after else None,
            "suspects": [s.to_json() for s in self.suspects], "tunable_ops": len(self.tunable),
            "chip": self.chip, "not_keepable": [op.to_json() for op in self.unkeepable],
            "candidates_tried": len(self.candidates), "grown_to": self.grown,
            "candidates": [c.to_json() for c in self.candidates], "atc_command": list(self.atc_command),
        }
