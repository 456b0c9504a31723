"""Each compared tensor's expected-error band: the error its precision mode alone explains, tensor by tensor.

msit's per-tensor limits are absolute (RED 0.05, cosine 0.99): a layer damaged by a few percent stays under them,
and a healthy deep network in fp16 crosses them. Here every compared tensor's error (its RED against TensorFlow) is
set against the error of the same tensor in an undamaged conversion of the same pb in the same precision mode: the
stand-in's emulation (`infer.compare._judge.expected.emulated_model`: tf2onnx, the chip's precision plan, fp16 rounding
per op as the plan says), run by ONNX Runtime on the same batch. For an fp32 conversion that is a second fp32
evaluation in another order (ONNX Runtime's kernels against TensorFlow's); for the fp16 modes, the emulated fp16
error. The band is that error, floored at `BAND_FLOOR` (about where fp32 arithmetic in two runtimes differs), so
that a tensor the emulation computes exactly is not held to 0.

    excess = RED / band

A tensor is out of its band when its excess passes the factor (`--expected-factor`, default 10: measured on
healthy models, docs/compare.md). The first tensor to diverge is found from the excesses
(`infer.compare._layers.diagnosis`): the first out of its band whose compared upstream all stays inside, and then,
along the chain of raised tensors that leads to it, the one where the excess jumps most (its excess over its inputs'),
so that damage of a few percent is named where it enters, not where its error, carried on, crosses the factor.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

BAND_FLOOR = 1e-6  # RED: a tensor that only fp32 rounding in two runtimes separates from TensorFlow's
# The excess from which a tensor counts as raised above its band, for tracing the jump back from the first tensor out
# of its band: well above a healthy conversion's (1 on the stand-in, a few times either way on an NPU, whose fusions
# round elsewhere), and below the factor.
RAISED = 3.0


@dataclass(frozen=True)
class LayerBands:
    """The expected error of each compared tensor on one batch, and what it came from."""

    precision_mode: str
    factor: float
    emulated: str  # the emulated model that computed them (its model.json)
    bands: dict[str, float] = field(default_factory=dict)  # TF tensor -> expected RED (floored); inf: it overflows too

    def band(self, tensor: str) -> float:
        """The tensor's band; NaN where the emulation has no value for it (not compared there)."""
        return self.bands.get(tensor, math.nan)

    def to_json(self) -> dict[str, Any]:
        return {"precision_mode": self.precision_mode, "factor": self.factor, "emulated": self.emulated,
                "floor": BAND_FLOOR}


def band_of(emulated_red: float) -> float:
    """The band from the emulation's RED: floored; a NaN (the emulation's own inf/NaN) as inf, so that the same
    inf/NaN in the converted model is within it."""
    if math.isnan(emulated_red):
        return math.inf
    return max(emulated_red, BAND_FLOOR)


def excess(error: float, band: float) -> float:
    """How many times its band a tensor's error is; NaN where there is no band; inf for an inf/NaN error (RED
    inf, `infer.compare._layers.diagnosis`) the band does not cover."""
    if math.isnan(band):
        return math.nan
    if math.isinf(band):  # the emulation overflows there too: what the precision does, whatever the value
        return 1.0
    if not math.isfinite(error):
        return math.inf
    return error / band
