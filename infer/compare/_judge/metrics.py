"""The ten metrics of Ascend's accuracy tools (msaccucmp / msit compare), with their definitions, all in memory.

x is the converted model's tensor (actual, msaccucmp's "my output"), y the golden (TensorFlow) one, both
flattened and taken as float64; eps is float64's machine epsilon, as msaccucmp's ConstManager.FLOAT_EPSILON.
These functions are the reference: `infer.compare._judge.accumulate` computes the same numbers batch by batch, and the
tests hold one to the other and both to msaccucmp's own code (mindstudio-probe 26.2.0,
tests/infer/compare/test_msaccucmp_metrics.py). docs/metrics.md gives each definition with its source.

msaccucmp's edge cases, kept: a tensor whose norm is at most eps counts as all zero; cosine of two such tensors
is 1, and otherwise NaN where either side's norm is at most eps²; the relative errors take
|x/y - 1| where |y| > eps and 0 elsewhere, MeanRelativeError dividing by every element; KL takes P from the actual
tensor and Q from the golden, each min-max normalised and clamped to float32's eps.

Where infer departs on purpose (docs/metrics.md says why; a test pins each):
- cosine of a tensor whose dims are all 1 is computed (msaccucmp says 1.0 for any such "scalar");
- RelativeEuclideanDistance against an all-zero golden is inf unless the actual is all zero too (msaccucmp: 0);
- sums are taken in float64 (msaccucmp casts to float32 first, where squares above ~1.8e19 overflow and squared
  differences below ~1e-19 lose digits);
- an empty tensor has cosine 1 and every error 0 (msaccucmp: NaN for most, numpy refusing the max of nothing);
- bool against bool is compared as 0 and 1 (msaccucmp: NaN but for cosine);
- integers past 2^24 are exact (to 2^53; msaccucmp's float32 copy merges neighbours).
"""

from __future__ import annotations

import math
from array import array
from bisect import bisect_left
from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np

from binio.document import json_float
from binio.dtypes import FP16_MAX
from binio.positions import position
from infer.compare.metric_names import SCALAR_METRICS

EPS = float(np.finfo(np.float64).eps)
# KL clamps each normalised tensor here, not at EPS: msaccucmp's alg_KullbackLeiblerDivergence.FLOAT_EPSILON.
KL_EPS = float(np.finfo(np.float32).eps)

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


@dataclass(frozen=True, slots=True)  # one per batch: no __dict__ (issue 42: memory flat in the batches)
class ValueCounts:
    """Non-finite values on each side, values fp16 cannot hold (|v| > 65504, finite), and the converted model's
    values at fp16's largest (±65504) where TensorFlow's are below it: an fp16 overflow saturated (ATC's saturation
    mode, a cast that clamps) rather than made inf."""

    nan_actual: int = 0
    inf_actual: int = 0
    nan_golden: int = 0
    inf_golden: int = 0
    beyond_fp16_actual: int = 0
    beyond_fp16_golden: int = 0
    nonfinite_actual_where_golden_finite: int = 0
    saturated_fp16_actual: int = 0

    @property
    def fp16_overflow(self) -> bool:
        """The flag: golden values beyond fp16's range, or the converted model gave inf/NaN where TF did not."""
        return self.beyond_fp16_golden > 0 or self.nonfinite_actual_where_golden_finite > 0

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "fp16_overflow": self.fp16_overflow}


@dataclass(frozen=True, slots=True)  # one per batch: no __dict__
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
        """msaccucmp's StandardDeviation cell: ``(actual mean;actual std),(golden mean;golden std)``, each to three
        decimals and below 0.001 in magnitude written 0 (so never ``-0.000``), as alg_StandardDeviation writes it."""
        return "({};{}),({};{})".format(*(_three_decimals(v) for v in (self.actual_mean, self.actual_std,
                                                                        self.golden_mean, self.golden_std)))

    def to_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {name: json_float(self.value(name)) for name in SCALAR_METRICS}
        document["StandardDeviation"] = {
            "actual_mean": json_float(self.actual_mean), "actual_std": json_float(self.actual_std),
            "golden_mean": json_float(self.golden_mean), "golden_std": json_float(self.golden_std),
        }
        document.update(elements=self.elements, atol=self.atol, rtol=self.rtol, counts=self.counts.to_json())
        return document


_FLOAT_FIELDS = tuple(f.name for f in fields(Metrics) if f.name not in ("elements", "counts", "atol", "rtol"))
_COUNT_FIELDS = tuple(f.name for f in fields(ValueCounts))
_NO_COUNTS = ValueCounts()


class MetricsColumns:
    """The metrics of many batches (one output's, in dataset order) as flat arrays of numbers: a batch costs its 14
    floats and its element count, not a `Metrics` and a `ValueCounts` object (issue 42: at batch 1 a validation set
    is 50,000 batches); its 8 counts of NaN, inf and fp16 range are kept only where one is not 0 (a batch that holds
    such a value), with the batch's position. `self[i]` makes batch i's `Metrics` again, equal to the one appended,
    bit for bit. The tolerances are the options' and the same for every batch: held once, as given (an int stays
    an int in report.json)."""

    __slots__ = ("_counted", "_counts", "_elements", "_floats", "atol", "rtol")

    def __init__(self, atol: float, rtol: float) -> None:
        self.atol, self.rtol = atol, rtol
        self._floats = array("d")
        self._elements = array("q")
        self._counted = array("q")  # the positions of the batches whose counts are not all 0, ascending
        self._counts = array("q")  # their counts, len(_COUNT_FIELDS) a batch

    def append(self, metrics: Metrics) -> None:
        if (metrics.atol, metrics.rtol) != (self.atol, self.rtol):
            raise ValueError(f"tolerances {metrics.atol}, {metrics.rtol} differ from the table's {self.atol}, "
                             f"{self.rtol}")
        counts = [getattr(metrics.counts, name) for name in _COUNT_FIELDS]
        if any(counts):
            self._counted.append(len(self._elements))
            self._counts.extend(counts)
        self._floats.extend([getattr(metrics, name) for name in _FLOAT_FIELDS])
        self._elements.append(metrics.elements)

    def extend(self, other: MetricsColumns) -> None:
        """Appends every row of `other` (a later shard's), in order."""
        if (other.atol, other.rtol) != (self.atol, self.rtol):
            raise ValueError(f"tolerances {other.atol}, {other.rtol} differ from the table's {self.atol}, {self.rtol}")
        offset = len(self._elements)
        self._counted.extend([offset + index for index in other._counted])
        self._counts.extend(other._counts)
        self._floats.extend(other._floats)
        self._elements.extend(other._elements)

    def __len__(self) -> int:
        return len(self._elements)

    def __getitem__(self, index: int) -> Metrics:
        index = position(index, len(self))
        width = len(_FLOAT_FIELDS)
        floats = self._floats[index * width:(index + 1) * width]
        return Metrics(elements=self._elements[index], atol=self.atol, rtol=self.rtol, counts=self._counts_of(index),
                       **dict(zip(_FLOAT_FIELDS, floats, strict=True)))

    def _counts_of(self, index: int) -> ValueCounts:
        place = bisect_left(self._counted, index)
        if place == len(self._counted) or self._counted[place] != index:
            return _NO_COUNTS
        width = len(_COUNT_FIELDS)
        return ValueCounts(**dict(zip(_COUNT_FIELDS, self._counts[place * width:(place + 1) * width], strict=True)))

    def values(self, name: str) -> np.ndarray:
        """One float metric of every batch, in order (``cosine_similarity``): a read-only view of the column, no
        copy and no `Metrics` made."""
        view = np.frombuffer(self._floats, dtype=np.float64)[_FLOAT_FIELDS.index(name)::len(_FLOAT_FIELDS)]
        view.flags.writeable = False
        return view

    def __eq__(self, other: object) -> bool:
        """Equal numbers, bit for bit (NaN equals NaN here: the same bytes)."""
        if not isinstance(other, MetricsColumns):
            return NotImplemented
        return ((self.atol, self.rtol) == (other.atol, other.rtol) and self._floats.tobytes() == other._floats.tobytes()
                and self._elements == other._elements and self._counted == other._counted
                and self._counts == other._counts)

    __hash__ = None  # type: ignore[assignment]  # mutable while filled: not hashable, as a list


def _three_decimals(value: float) -> str:
    return "%.3f" % (0.0 if abs(value) < 0.001 else value)


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
    """msaccucmp's zero tests on the norms, in its order: both at most eps (the golden's strictly below) -> 1;
    then either side's norm at most eps² -> NaN (the angle is undefined, and such a pair is wrong)."""
    norm_x, norm_y = math.sqrt(sum_xx), math.sqrt(sum_yy)
    if norm_x <= EPS and norm_y < EPS:
        return 1.0
    if math.sqrt(norm_x) <= EPS or math.sqrt(norm_y) <= EPS:
        return math.nan
    value = sum_xy / (norm_x * norm_y)
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
    """A golden of norm at most eps is all zero to msaccucmp, which then says 0 whatever the actual holds; here it
    is 0 only where the actual is as close to zero (‖x - y‖ <= eps), else inf: a wrong tensor must not pass."""
    if math.sqrt(sum_yy) <= EPS:
        return 0.0 if math.sqrt(sum_sq_diff) <= EPS else math.inf
    return math.sqrt(sum_sq_diff / sum_yy)


@nonfinite_is_data
def relative_errors(actual: Any, golden: Any) -> np.ndarray:
    """|x/y - 1| over the elements where |y| > eps; the others count as 0 (in the mean too)."""
    x, y = _pair(actual, golden)
    mask = np.abs(y) > EPS
    return np.abs(x[mask] / y[mask] - 1.0)


def accumulated_relative_error(actual: Any, golden: Any) -> float:
    return float(np.sum(relative_errors(actual, golden)))


def max_relative_error(actual: Any, golden: Any) -> float:
    errors = relative_errors(actual, golden)
    return float(np.max(errors)) if errors.size else 0.0


def mean_relative_error(actual: Any, golden: Any) -> float:
    """Divided by every element, as msaccucmp does (the elements with |y| <= eps add 0), not by the masked ones."""
    elements = as_float64(golden).size
    return float(np.sum(relative_errors(actual, golden))) / elements if elements else 0.0


@nonfinite_is_data
def kl_distribution(values: np.ndarray, low: float, high: float) -> np.ndarray:
    """Min-max normalised to [0, 1] and clamped to >= float32's eps: not yet summing to 1. A constant tensor gives
    equal values (msaccucmp keeps it unscaled, then clamps: equal values all the same), so a uniform distribution."""
    span = high - low
    if math.isnan(span):  # a NaN in the tensor: no distribution, and the KL is NaN
        return np.full_like(values, math.nan)
    if not span > 0:
        return np.full_like(values, KL_EPS)
    scaled = np.subtract(values, low)
    scaled /= span
    return np.maximum(scaled, KL_EPS, out=scaled)


@nonfinite_is_data
def kullback_leibler_divergence(actual: Any, golden: Any) -> float:
    """Σ P log(P/Q) with P from the actual tensor ("my output") and Q from the golden one, each normalised as
    msaccucmp does: KL(actual ‖ golden), its direction (KL is not symmetric: the other is another number)."""
    x, y = _pair(actual, golden)
    if not x.size:
        return 0.0
    p = kl_distribution(x, float(np.min(x)), float(np.max(x)))
    q = kl_distribution(y, float(np.min(y)), float(np.max(y)))
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
        saturated_fp16_actual=int(np.count_nonzero((np.abs(x) == FP16_MAX) & (np.abs(y) < FP16_MAX))),
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
