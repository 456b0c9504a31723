"""The metrics' names as msaccucmp spells them, which way each is better, and how their numbers are shown: standard
library only, so the thresholds (and the options holding them) import no numpy."""

from __future__ import annotations

import math

# The metric names as msaccucmp's CSV spells them, in its column order.
CSV_METRICS: tuple[str, ...] = (
    "CosineSimilarity", "MaxAbsoluteError", "AccumulatedRelativeError", "RelativeEuclideanDistance",
    "KullbackLeiblerDivergence", "StandardDeviation", "MeanAbsoluteError", "RootMeanSquareError",
    "MaxRelativeError", "MeanRelativeError",
)
# The metrics a threshold can be put on: every scalar one, plus our allclose pass rate.
SCALAR_METRICS: tuple[str, ...] = (
    "CosineSimilarity", "MaxAbsoluteError", "MeanAbsoluteError", "RootMeanSquareError",
    "RelativeEuclideanDistance", "AccumulatedRelativeError", "MaxRelativeError", "MeanRelativeError",
    "KullbackLeiblerDivergence", "AllclosePassRate",
)
# Metrics where a larger value is better: a threshold on them is a floor, on the others a ceiling.
HIGHER_IS_BETTER: frozenset[str] = frozenset({"CosineSimilarity", "AllclosePassRate"})


def shown(value: float, metric: str = "") -> str:
    """A number as people read it (terminal, HTML): six significant digits, eight for a CosineSimilarity (fp16
    moves it in the 7th, which six would round to 1), a percentage for AllclosePassRate; NaN spelled ``NaN``."""
    if math.isnan(value):
        return "NaN"
    if metric == "AllclosePassRate":
        return f"{value:.2%}"
    return f"{value:.8g}" if metric == "CosineSimilarity" else f"{value:.6g}"


def shown_limit(limit: float) -> str:
    """A limit as the user set it: every digit given (0.9999999 stays 0.9999999, where ``:g`` shows 1)."""
    return f"{limit:.12g}"


def shown_against(value: float, limit: float, metric: str = "") -> str:
    """A value that breaks `limit`, with as many digits as it takes not to read as the limit itself
    (0.99999981 against 0.9999999, not 1 < 1)."""
    text = shown(value, metric)
    if math.isnan(value) or metric == "AllclosePassRate" or value == limit:
        return text
    digits = 8 if metric == "CosineSimilarity" else 6
    while float(text) == float(shown_limit(limit)) and digits < 17:
        digits += 1
        text = f"{value:.{digits}g}"
    return text
