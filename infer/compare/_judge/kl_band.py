"""KL on a near-uniform distribution, judged against its band rather than msit's absolute 0.005.

msaccucmp's KullbackLeiblerDivergence min-max normalises each tensor before comparing: on a near-uniform output (a
classifier with random weights, whose 1000 probabilities all sit near 0.001) the range it divides by is a small
fraction of the values, and fp16's rounding, a part in two thousand of each value, becomes a large part of each
normalised one. A healthy fp16 conversion then fails on KL alone (0.00509 > 0.005) with cosine 0.99999998.

So an output that breaks msit's KL limit and no other, whose TensorFlow values are near-uniform (their spread, the
standard deviation, below their mean), has its KL set against what the precision alone gives there: the stand-in's
emulation of the same precision mode on the same bins (`infer.compare._judge.expected`). Within `factor` times that
KL, the KL failure is the rounding's, and the output passes; past it, or where no emulation can be made, it fails
as before and the line says why KL is suspect. A KL limit the user set (--threshold kl=...) is never second-guessed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from binio.document import json_float
from infer.compare._judge.metrics import Metrics
from infer.compare.metric_names import shown
from infer.compare.thresholds import Failure, Thresholds

KL = "KullbackLeiblerDivergence"
KL_FLOOR = 1e-7  # an emulated KL of 0 (the precision represents the output exactly) still leaves fp32's noise
DOCS = "docs/compare.md#kl-on-a-near-uniform-distribution"


@dataclass(frozen=True)
class KlBand:
    """One output's KL against what its precision alone gives."""

    actual: float
    emulated: float  # the emulation's KL; NaN where it could not be made
    limit: float  # msit's
    factor: float
    precision_mode: str
    spread: float  # TensorFlow's standard deviation over its mean

    @property
    def within(self) -> bool:
        return not math.isnan(self.emulated) and self.actual <= self.factor * max(self.emulated, KL_FLOOR)

    def describe(self) -> str:
        """``KL 0.00509 is past msit's 0.005, but ...: judged against its band, not a failure``."""
        mode = self.precision_mode or "its precision"
        why = (f"KL {shown(self.actual)} is past msit's {self.limit:g}, but on a near-uniform distribution (its values "
               f"spread {self.spread:.2g} of their mean) KL measures rounding more than the conversion")
        if math.isnan(self.emulated):
            return (f"{why}; the stand-in, which would give what {mode} alone explains, is not installed here: a "
                    f"failure by msit's rule ({DOCS})")
        ratio = self.actual / max(self.emulated, KL_FLOOR)
        if self.within:
            return (f"{why}: {mode} alone gives KL {shown(self.emulated)} here (the stand-in's emulation), this is "
                    f"{ratio:.3g}x that, within {self.factor:g}x: judged against that band, not a failure ({DOCS})")
        return (f"{why}; yet it is {ratio:.3g}x the KL {mode} alone gives here ({shown(self.emulated)}), past "
                f"{self.factor:g}x: a failure ({DOCS})")

    def to_json(self) -> dict[str, Any]:
        return {"actual": json_float(self.actual), "emulated": json_float(self.emulated), "limit": self.limit,
                "factor": self.factor, "precision_mode": self.precision_mode, "spread": json_float(self.spread),
                "within": self.within}


def near_uniform(metrics: Metrics) -> bool:
    """TensorFlow's values spread less than their mean: every value near the same (positive) one."""
    return metrics.golden_mean > 0 and metrics.golden_std < metrics.golden_mean


def fails_on_kl_alone(output: str, failures: tuple[Failure, ...], metrics: Metrics, thresholds: Thresholds) -> bool:
    """Whether the output breaks msit's default KL limit and nothing else, on a near-uniform distribution: the case
    whose KL is judged against its band."""
    named = (output, output.split(":")[0])
    user_set = any(s.metric == KL and not s.per_sample and (s.output is None or s.output in named)
                   for s in thresholds.settings)
    return not user_set and len(failures) == 1 and failures[0].metric == KL and near_uniform(metrics)


def kl_band(actual: Metrics, emulated: Metrics | None, limit: float, factor: float, precision_mode: str) -> KlBand:
    return KlBand(actual=actual.kullback_leibler_divergence,
                  emulated=math.nan if emulated is None else emulated.kullback_leibler_divergence,
                  limit=limit, factor=factor, precision_mode=precision_mode,
                  spread=actual.golden_std / actual.golden_mean)
