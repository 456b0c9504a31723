"""fp16 overflow or underflow inside the network, named from the outputs alone (no --layerwise).

A conversion that computes in fp16 fails in its own ways, and the outputs compare reads already show them:

- inf or NaN in the converted model's outputs where TensorFlow's are finite: a value passed 65504, fp16's largest,
  and became inf (NaN follows from inf - inf, 0 * inf);
- values at exactly ±65504 where TensorFlow's are below it: the same overflow, saturated instead of made inf (ATC's
  saturation mode, a clamping cast);
- an output the same for every sample where TensorFlow's varies, while the same conversion computed in fp32 (the
  stand-in, every op planned fp32: TensorFlow's own arithmetic) still varies: a sum of squares past 65504 made inf,
  then 1/sqrt(inf) = 0, scales every feature to 0; a tiny value made 0 (underflow) does the like. Without the
  stand-in at hand (or a pb to convert), the fp32 run cannot be made, and the cause says so.

Only under a precision mode that computes in fp16; the cause names no op (--layerwise finds it) and the fix is
tune-precision's (the ops to keep in fp32). docs/troubleshooting.md says the same to a user.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from infer.compare._judge.constant_outputs import ConstantOutput
from infer.compare._judge.metrics import Metrics

CAUSE = "fp16 overflow (or underflow) inside the network"
# Where the words of the cause are explained once, for a newcomer: the terminal and the reports link here.
DOCS = "docs/troubleshooting.md#fp16-overflow-and-underflow"

# The evidence, each with the fp16 column's word for it.
INF_NAN = "inf/NaN"
SATURATED = "overflow"
COLLAPSED = "over/underflow"


@dataclass(frozen=True)
class Fp16Trouble:
    """One output whose values show an fp16 overflow or underflow inside the network."""

    output: str
    evidence: str  # INF_NAN, SATURATED or COLLAPSED
    count: int  # the values inf/NaN or at ±65504 (0 for a collapse)
    precision_mode: str
    confirmed: bool = True  # a collapse: the fp32 run varies (False: it could not be made here)

    def describe(self) -> str:
        """Why, in a newcomer's words: what was seen, and what it means."""
        mode = self.precision_mode or "an fp16 mode"
        if self.evidence == INF_NAN:
            seen = (f"{self.output} holds {self.count} inf/NaN value{'s' if self.count != 1 else ''} where "
                    "TensorFlow's are finite")
        elif self.evidence == SATURATED:
            seen = (f"{self.output} holds {self.count} value{'s' if self.count != 1 else ''} at ±65504, fp16's "
                    "largest, where TensorFlow's are below it")
        else:
            fp32 = ("as they do with every op in fp32 (the stand-in)" if self.confirmed else
                    "(the stand-in's run of it in fp32, which would tell, could not be made here)")
            seen = (f"{self.output} is the same for every sample under {mode}, where TensorFlow's outputs vary, "
                    f"{fp32}")
        meaning = ("a value inside the network passed 65504, fp16's largest, and became inf, or fell below fp16's "
                   "smallest and became 0")
        return f"{seen}: {meaning}"

    def to_json(self) -> dict[str, Any]:
        return {"output": self.output, "evidence": self.evidence, "count": self.count,
                "precision_mode": self.precision_mode, "confirmed": self.confirmed, "cause": CAUSE,
                "text": self.describe()}


def fp16_troubles(precision_mode: str, computes_in_fp16: bool, metrics: Sequence[tuple[str, Metrics]],
                  constant: Sequence[ConstantOutput],
                  fp32_constant: Callable[[str], bool | None]) -> tuple[Fp16Trouble, ...]:
    """The outputs whose values show fp16 trouble, in output order. `metrics`: (output, its metrics over the
    dataset); `constant`: the outputs the same for every sample; `fp32_constant(output)`: whether that output is
    the same for every sample with every op in fp32 (None: that run cannot be made here), asked only for an
    output that collapsed."""
    if not computes_in_fp16:
        return ()
    collapsed = {c.name for c in constant if c.lost_the_input}
    found = []
    for name, measured in metrics:
        counts = measured.counts
        if counts.nonfinite_actual_where_golden_finite:
            found.append(Fp16Trouble(name, INF_NAN, counts.nonfinite_actual_where_golden_finite, precision_mode))
        elif counts.saturated_fp16_actual:
            found.append(Fp16Trouble(name, SATURATED, counts.saturated_fp16_actual, precision_mode))
        elif name in collapsed:
            in_fp32 = fp32_constant(name)
            if in_fp32 is not True:  # constant in fp32 too: the conversion, not fp16, lost the input
                found.append(Fp16Trouble(name, COLLAPSED, 0, precision_mode, confirmed=in_fp32 is False))
    return tuple(found)
