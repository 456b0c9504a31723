"""The ten metrics of Ascend's accuracy tools (msaccucmp / msit compare), with their definitions, all in memory.

x is the converted model's tensor (actual), y the golden (TensorFlow) one, both flattened and taken as float64;
eps is float64's machine epsilon. These functions are the reference: `infer.compare._accumulate` computes the same
numbers batch by batch, and the tests hold one to the other.

Edge cases (msaccucmp reports them as a fail reason; we give the number a rule can judge):
- cosine: both tensors all zero -> 1; exactly one all zero -> NaN (the angle is undefined, and such a pair is
  wrong, so a NaN fails every threshold);
- RelativeEuclideanDistance with Σy² = 0: 0 when x equals y, else inf;
- the relative errors use only the elements with |y| > eps; where there are none they are 0;
- an empty tensor has cosine 1 and every error 0.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from binio.document import json_float
from infer.compare.metric_names import SCALAR_METRICS

EPS = float(np.finfo(np.float64).eps)
FP16_MAX = float(np.finfo(np.float16).max)  # 65504: beyond it an fp16 tensor holds inf

# NaN and inf in a tensor are data here (counted, reported, judged by the thresholds), so numpy's warnings about
# them (inf - inf, 0/0, log of 0) are silenced where the metrics are computed: they would only reach the terminal.
nonfinite_is_data = np.errstate(divide="ignore", invalid="ignore", over="ignore")

_FIELD_OF = {
    "CosineSimilarity": "cosine_similarity", "MaxAbsoluteError": "max_absolute_error",
    "MeanAbsoluteError": "mean_absolute_error", "RootMeanSquareError": "root_mean_square_error",
    "RelativeEuclideanDistance": "relative_euclidean_distance",
    "AccumulatedRelativeError": "accumulated_relative_error", "MaxRelativeError": "max_relative_error",
    "MeanRelativeError": "mean_relative_error", "KullbackLeiblerDivergence": "kullback_leibler_divergence",
    "AllclosePassRate": "allclose_pass_rate",
}


@dataclass(frozen=True)
class ValueCounts:
    """Non-finite values on each side, and values fp16 cannot hold (|v| > 65504, finite)."""

    nan_actual: int = 0
    inf_actual: int = 0
    nan_golden: int = 0
    inf_golden: int = 0
    beyond_fp16_actual: int = 0
    beyond_fp16_golden: int = 0
    nonfinite_actual_where_golden_finite: int = 0

    @property
    def fp16_overflow(self) -> bool:
        """The flag: golden values beyond fp16's range, or the converted model gave inf/NaN where TF did not."""
        return self.beyond_fp16_golden > 0 or self.nonfinite_actual_where_golden_finite > 0

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "fp16_overflow": self.fp16_overflow}


@dataclass(frozen=True)
class Metrics:
    """Every number one comparison of two tensors gives."""

    elements: int
    cosine_similarity: float
    max_absolute_error: float
    mean_absolute_error: float
    root_mean_square_error: float
    relative_euclidean_distance: float
    accumulated_relative_error: float
    max_relative_error: float
    mean_relative_error: float
    kullback_leibler_divergence: float
    actual_mean: float
    actual_std: float
    golden_mean: float
    golden_std: float
    allclose_pass_rate: float
    atol: float
    rtol: float
    counts: ValueCounts

    def value(self, metric: str) -> float:
        """A scalar metric by its msaccucmp name (``CosineSimilarity``)."""
        return float(getattr(self, _FIELD_OF[metric]))

    @property
    def standard_deviation(self) -> str:
        """msaccucmp's StandardDeviation cell: ``(actual mean;actual std),(golden mean;golden std)``."""
        return (f"({self.actual_mean:.6g};{self.actual_std:.6g}),"
                f"({self.golden_mean:.6g};{self.golden_std:.6g})")

    def to_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {name: json_float(self.value(name)) for name in SCALAR_METRICS}
        document["StandardDeviation"] = {
            "actual_mean": json_float(self.actual_mean), "actual_std": json_float(self.actual_std),
            "golden_mean": json_float(self.golden_mean), "golden_std": json_float(self.golden_std),
        }
        document.update(elements=self.elements, atol=self.atol, rtol=self.rtol, counts=self.counts.to_json())
        return document


def sum_of_products(a: np.ndarray, b: np.ndarray) -> float:
    """Σ a·b without BLAS: np.dot hands a vector to BLAS's thread pool, which on a busy machine was measured here
    200x slower than this single-threaded loop (13 ms against 0.07 ms for 256K elements)."""
    return float(np.einsum("i,i->", a, b))


def as_float64(array: Any) -> np.ndarray:
    """The flattened tensor as float64 (ints, bools, fp16 and fp32 alike)."""
    return np.asarray(array).astype(np.float64, copy=False).ravel()


def _pair(actual: Any, golden: Any) -> tuple[np.ndarray, np.ndarray]:
    x, y = as_float64(actual), as_float64(golden)
    if x.size != y.size:
        raise ValueError(f"cannot compare {x.size} elements with {y.size}")
    return x, y


@nonfinite_is_data
def cosine_similarity(actual: Any, golden: Any) -> float:
    x, y = _pair(actual, golden)
    return cosine_from_sums(sum_of_products(x, y), sum_of_products(x, x), sum_of_products(y, y))


def cosine_from_sums(sum_xy: float, sum_xx: float, sum_yy: float) -> float:
    if sum_xx == 0.0 and sum_yy == 0.0:
        return 1.0
    if sum_xx == 0.0 or sum_yy == 0.0:
        return math.nan
    value = sum_xy / (math.sqrt(sum_xx) * math.sqrt(sum_yy))
    return 1.0 if value > 1.0 else value


@nonfinite_is_data
def max_absolute_error(actual: Any, golden: Any) -> float:
    x, y = _pair(actual, golden)
    return float(np.max(np.abs(x - y))) if x.size else 0.0


@nonfinite_is_data
def mean_absolute_error(actual: Any, golden: Any) -> float:
    x, y = _pair(actual, golden)
    return float(np.mean(np.abs(x - y))) if x.size else 0.0


@nonfinite_is_data
def root_mean_square_error(actual: Any, golden: Any) -> float:
    x, y = _pair(actual, golden)
    return float(np.sqrt(np.mean((x - y) ** 2))) if x.size else 0.0


@nonfinite_is_data
def relative_euclidean_distance(actual: Any, golden: Any) -> float:
    x, y = _pair(actual, golden)
    return red_from_sums(float(np.sum((x - y) ** 2)), float(np.sum(y * y)))


def red_from_sums(sum_sq_diff: float, sum_yy: float) -> float:
    if sum_yy == 0.0:
        return 0.0 if sum_sq_diff == 0.0 else math.inf
    return math.sqrt(sum_sq_diff / sum_yy)


@nonfinite_is_data
def relative_errors(actual: Any, golden: Any) -> np.ndarray:
    """|x/y - 1| over the elements where |y| > eps: the set the three relative errors use."""
    x, y = _pair(actual, golden)
    mask = np.abs(y) > EPS
    return np.abs(x[mask] / y[mask] - 1.0)


def accumulated_relative_error(actual: Any, golden: Any) -> float:
    return float(np.sum(relative_errors(actual, golden)))


def max_relative_error(actual: Any, golden: Any) -> float:
    errors = relative_errors(actual, golden)
    return float(np.max(errors)) if errors.size else 0.0


def mean_relative_error(actual: Any, golden: Any) -> float:
    errors = relative_errors(actual, golden)
    return float(np.mean(errors)) if errors.size else 0.0


@nonfinite_is_data
def kl_distribution(values: np.ndarray, low: float, high: float) -> np.ndarray:
    """Min-max normalised to [0, 1] (all zeros for a constant tensor), clamped to >= eps: not yet summing to 1."""
    span = high - low
    if math.isnan(span):  # a NaN in the tensor: no distribution, and the KL is NaN
        return np.full_like(values, math.nan)
    if not span > 0:
        return np.full_like(values, EPS)
    scaled = np.subtract(values, low)
    scaled /= span
    return np.maximum(scaled, EPS, out=scaled)


@nonfinite_is_data
def kullback_leibler_divergence(actual: Any, golden: Any) -> float:
    """Σ P log(P/Q) with P from the golden tensor and Q from the actual one, each normalised as msaccucmp does."""
    x, y = _pair(actual, golden)
    if not x.size:
        return 0.0
    p = kl_distribution(y, float(np.min(y)), float(np.max(y)))
    q = kl_distribution(x, float(np.min(x)), float(np.max(x)))
    p, q = p / np.sum(p), q / np.sum(q)
    return float(np.sum(p * np.log(p / q)))


@nonfinite_is_data
def allclose_pass_rate(actual: Any, golden: Any, *, atol: float, rtol: float) -> float:
    """The share of elements with |x - y| <= atol + rtol·|y| (numpy's isclose; NaN is never close)."""
    x, y = _pair(actual, golden)
    return float(np.mean(np.isclose(x, y, rtol=rtol, atol=atol))) if x.size else 1.0


@nonfinite_is_data
def value_counts(actual: Any, golden: Any) -> ValueCounts:
    x, y = _pair(actual, golden)
    finite_x, finite_y = np.isfinite(x), np.isfinite(y)
    return ValueCounts(
        nan_actual=int(np.count_nonzero(np.isnan(x))), inf_actual=int(np.count_nonzero(np.isinf(x))),
        nan_golden=int(np.count_nonzero(np.isnan(y))), inf_golden=int(np.count_nonzero(np.isinf(y))),
        beyond_fp16_actual=int(np.count_nonzero(finite_x & (np.abs(x) > FP16_MAX))),
        beyond_fp16_golden=int(np.count_nonzero(finite_y & (np.abs(y) > FP16_MAX))),
        nonfinite_actual_where_golden_finite=int(np.count_nonzero(~finite_x & finite_y)),
    )


@nonfinite_is_data
def compute_metrics(actual: Any, golden: Any, *, atol: float, rtol: float) -> Metrics:
    """Every metric of one pair of tensors held in memory, straight from the definitions."""
    x, y = _pair(actual, golden)
    empty = not x.size
    return Metrics(
        elements=int(x.size),
        cosine_similarity=cosine_similarity(x, y),
        max_absolute_error=max_absolute_error(x, y),
        mean_absolute_error=mean_absolute_error(x, y),
        root_mean_square_error=root_mean_square_error(x, y),
        relative_euclidean_distance=relative_euclidean_distance(x, y),
        accumulated_relative_error=accumulated_relative_error(x, y),
        max_relative_error=max_relative_error(x, y),
        mean_relative_error=mean_relative_error(x, y),
        kullback_leibler_divergence=kullback_leibler_divergence(x, y),
        actual_mean=0.0 if empty else float(np.mean(x)), actual_std=0.0 if empty else float(np.std(x)),
        golden_mean=0.0 if empty else float(np.mean(y)), golden_std=0.0 if empty else float(np.std(y)),
        allclose_pass_rate=allclose_pass_rate(x, y, atol=atol, rtol=rtol),
        atol=atol, rtol=rtol,
        counts=value_counts(x, y),
    )
