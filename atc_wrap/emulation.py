"""Emulating ATC's precision modes on an fp32 ONNX graph (see DESIGN.md, "Emulating ATC's fp16")."""

from __future__ import annotations

from collections.abc import Set
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Emulation:
    mode: str
    storage: str  # fp16 | fp32 | mixed
    rounded_tensors: int = 0
    rounded_weights: int = 0
    fp32_op_types: tuple[str, ...] = ()
    emulated: tuple[str, ...] = ()
    not_emulated: tuple[str, ...] = ()
    io: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"mode": self.mode, "storage": self.storage, "rounded_tensors": self.rounded_tensors,
                "rounded_weights": self.rounded_weights, "fp32_op_types": list(self.fp32_op_types),
                "emulated": list(self.emulated), "not_emulated": list(self.not_emulated), "io": dict(self.io)}


def emulate_precision(model: Any, mode: str, *, fp16_inputs: Set[str], fp16_outputs: Set[str]) -> Emulation:
    """Rewrites `model` in place; returns what was emulated."""
    if mode not in ("force_fp32", "must_keep_origin_dtype") or fp16_inputs or fp16_outputs:
        raise NotImplementedError(mode)
    return Emulation(mode=mode, storage="fp32")
