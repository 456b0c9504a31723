"""The metrics of `infer.compare._judge.metrics`, computed batch by batch so a dataset never has to fit in memory.

Every metric but one is a function of sums, maxima and counts that merge exactly across batches: Σxy, Σx², Σy²,
Σ|x-y|, Σ(x-y)², max|x-y|, the relative-error sum and maximum, the isclose count; means and standard deviations
merge by Chan's pairwise update (stable where Σx² - n·mean² is not).

KullbackLeiblerDivergence cannot be done in one pass: each tensor is min-max normalised by its *global* minimum
and maximum before anything is summed. So it takes two passes over the (memory-mapped) outputs: pass one finds
the four extremes along with everything else, pass two sums, with a = max((x-min_x)/(max_x-min_x), eps32) from
the actual tensor and b likewise from the golden y,

    S_a = Σa,  S_b = Σb,  T = Σ a·log(a/b),  and  KL = T/S_a + log(S_b/S_a)

which is Σ P·log(P/Q) for P = a/S_a, Q = b/S_b, rearranged so that no pass needs the sums of the other. The result
equals the all-in-memory one up to the order of float additions.
"""

from __future__ import annotations

import math
from array import array
from dataclasses import dataclass, field, fields

import numpy as np

from binio.dtypes import FP16_MAX
from infer.compare._judge.metrics import (
    EPS,
    Metrics,
    ValueCounts,
    as_float64,
    cosine_from_sums,
    kl_distribution,
    nonfinite_is_data,
    red_from_sums,
    sum_of_products,
)


@dataclass(slots=True)  # two per batch accumulator: no __dict__
class _Moments:
    """Count, mean and sum of squared deviations of one side, merged by Chan et al.'s update."""

    count: int = 0
    mean: float = 0.0
    m2: float = 0.0

    @nonfinite_is_data
    def add(self, values: np.ndarray) -> None:
        if values.size:
            mean = float(np.mean(values))
            centred = values - mean
            self.merge(_Moments(count=int(values.size), mean=mean, m2=sum_of_products(centred, centred)))

    def merge(self, other: _Moments) -> None:
        n, mean, m2 = other.count, other.mean, other.m2
        if not n:
            return
        total = self.count + n
        delta = mean - self.mean
        if not (math.isfinite(self.mean) and math.isfinite(mean)):
            # An inf on either side: the mean is inf (or NaN for inf - inf) and the deviation undefined, as numpy has.
            self.mean = (self.mean * self.count + mean * n) / total
            self.m2 = math.nan
        elif self.count == 0:
            self.mean, self.m2 = mean, m2
        else:
            self.mean = self.mean + delta * n / total
            self.m2 = self.m2 + m2 + delta * delta * self.count * n / total
        self.count = total

    @property
    def std(self) -> float:
        return math.sqrt(self.m2 / self.count) if self.count else 0.0


_COUNT_NAMES = tuple(f.name for f in fields(ValueCounts))  # once: an accumulator is made per batch


@dataclass(slots=True)  # one per batch until the fold: no __dict__
class MetricAccumulator:
    """Pass one: feed every batch to `add`. Then pass two, for KL: feed every batch again to `add_kl`."""

    atol: float
    rtol: float
    elements: int = 0
    sum_xy: float = 0.0
    sum_xx: float = 0.0
    sum_yy: float = 0.0
    sum_abs_diff: float = 0.0
    sum_sq_diff: float = 0.0
    max_abs_diff: float = 0.0
    rel_sum: float = 0.0
    rel_max: float = 0.0
    close_count: int = 0
    min_x: float = math.inf
    max_x: float = -math.inf
    min_y: float = math.inf
    max_y: float = -math.inf
    moments_x: _Moments = field(default_factory=_Moments)
    moments_y: _Moments = field(default_factory=_Moments)
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_COUNT_NAMES, 0))
    kl_sum_a: float = 0.0
    kl_sum_b: float = 0.0
    kl_sum_alogab: float = 0.0
    kl_elements: int = 0

    @nonfinite_is_data
    def add(self, actual: np.ndarray, golden: np.ndarray, abs_diff: np.ndarray | None = None) -> None:
        """Pass one over one batch (any dtype, any shape with the same element count). `abs_diff`, |x - y| as
        float64 and flat, when the caller has it already (it is the batch's largest temporary)."""
        x, y = as_float64(actual), as_float64(golden)
        if x.size != y.size:
            raise ValueError(f"cannot compare {x.size} elements with {y.size}")
        if not x.size:
            return
        self.elements += int(x.size)
        if abs_diff is None:
            abs_diff = np.abs(x - y)
        self.sum_xy += sum_of_products(x, y)
        self.sum_xx += sum_of_products(x, x)
        self.sum_yy += sum_of_products(y, y)
        self.sum_abs_diff += float(np.sum(abs_diff))
        self.sum_sq_diff += sum_of_products(abs_diff, abs_diff)  # |d|·|d| = d·d, bit for bit
        self.max_abs_diff = _max(self.max_abs_diff, float(np.max(abs_diff)))
        abs_y = np.abs(y)
        mask = abs_y > EPS
        # Most tensors have no golden zero: then the whole batch is the set, and no masked copies are made.
        relative = np.divide(x, y) if mask.all() else np.divide(x[mask], y[mask])
        relative -= 1.0
        np.abs(relative, out=relative)
        if relative.size:
            self.rel_sum += float(np.sum(relative))
            self.rel_max = _max(self.rel_max, float(np.max(relative)))
        del relative
        # numpy's isclose, without its temporaries: |x-y| <= atol + rtol|y|, or equal (equal infinities).
        tolerance = abs_y
        tolerance *= self.rtol
        tolerance += self.atol
        close = abs_diff <= tolerance
        del tolerance, abs_y
        close |= x == y
        self.close_count += int(np.count_nonzero(close))
        self.min_x, self.max_x = _min(self.min_x, float(np.min(x))), _max(self.max_x, float(np.max(x)))
        self.min_y, self.max_y = _min(self.min_y, float(np.min(y))), _max(self.max_y, float(np.max(y)))
        self.moments_x.add(x)
        self.moments_y.add(y)
        self._count_values(x, y)

    def _count_values(self, x: np.ndarray, y: np.ndarray) -> None:
        finite_x, finite_y = np.isfinite(x), np.isfinite(y)
        all_finite_x, all_finite_y = bool(finite_x.all()), bool(finite_y.all())
        if not all_finite_x:
            self.counts["nan_actual"] += int(np.count_nonzero(np.isnan(x)))
            self.counts["inf_actual"] += int(np.count_nonzero(np.isinf(x)))
            self.counts["nonfinite_actual_where_golden_finite"] += int(np.count_nonzero(~finite_x & finite_y))
        if not all_finite_y:
            self.counts["nan_golden"] += int(np.count_nonzero(np.isnan(y)))
            self.counts["inf_golden"] += int(np.count_nonzero(np.isinf(y)))
        # The batch's extremes (known finite or not) tell when no element can pass fp16's range.
        for key, values, finite, all_finite in (("beyond_fp16_actual", x, finite_x, all_finite_x),
                                                ("beyond_fp16_golden", y, finite_y, all_finite_y)):
            if all_finite and max(-float(np.min(values)), float(np.max(values))) <= FP16_MAX:
                continue
            self.counts[key] += int(np.count_nonzero(finite & (np.abs(values) > FP16_MAX)))
        if not all_finite_x or max(-float(np.min(x)), float(np.max(x))) >= FP16_MAX:
            self.counts["saturated_fp16_actual"] += int(np.count_nonzero((np.abs(x) == FP16_MAX)
                                                                         & (np.abs(y) < FP16_MAX)))

    def merge(self, other: MetricAccumulator) -> None:
        """Folds in pass one of another accumulator (a batch's), as if its batches had been added here."""
        if not other.elements:
            return
        self.elements += other.elements
        for name in ("sum_xy", "sum_xx", "sum_yy", "sum_abs_diff", "sum_sq_diff", "rel_sum"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.close_count += other.close_count
        self.max_abs_diff = _max(self.max_abs_diff, other.max_abs_diff)
        self.rel_max = _max(self.rel_max, other.rel_max)
        self.min_x, self.max_x = _min(self.min_x, other.min_x), _max(self.max_x, other.max_x)
        self.min_y, self.max_y = _min(self.min_y, other.min_y), _max(self.max_y, other.max_y)
        self.moments_x.merge(other.moments_x)
        self.moments_y.merge(other.moments_y)
        for key, value in other.counts.items():
            self.counts[key] += value

    @nonfinite_is_data
    def add_kl(self, actual: np.ndarray, golden: np.ndarray) -> None:
        """Pass two over one batch: the KL sums, normalised by pass one's global extremes."""
        x, y = as_float64(actual), as_float64(golden)
        if not x.size:
            return
        a = kl_distribution(x, self.min_x, self.max_x)  # P: the actual tensor, as msaccucmp has it
        b = kl_distribution(y, self.min_y, self.max_y)
        self.kl_sum_a += float(np.sum(a))
        self.kl_sum_b += float(np.sum(b))
        log_ab = np.divide(a, b, out=b)  # b is summed: its memory takes log(a/b)
        np.log(log_ab, out=log_ab)
        self.kl_sum_alogab += sum_of_products(a, log_ab)
        self.kl_elements += int(x.size)

    def kl_sums(self) -> tuple[float, float, float, int]:
        return self.kl_sum_a, self.kl_sum_b, self.kl_sum_alogab, self.kl_elements

    def same_extremes(self, other: MetricAccumulator) -> bool:
        """Both saw the same four extremes (none NaN): then `add_kl` over a batch gives both the same sums."""
        mine = (self.min_x, self.max_x, self.min_y, self.max_y)
        return mine == (other.min_x, other.max_x, other.min_y, other.max_y) and not any(map(math.isnan, mine))

    @property
    def kl_pass_done(self) -> bool:
        return self.kl_elements == self.elements

    def kl_divergence(self) -> float:
        if not self.elements:
            return 0.0
        if not self.kl_pass_done:
            raise RuntimeError("the KL pass has not seen every element pass one saw")
        return self.kl_sum_alogab / self.kl_sum_a + math.log(self.kl_sum_b / self.kl_sum_a)

    def result(self) -> Metrics:
        """The metrics of everything added; KL needs the second pass over every batch first."""
        n = self.elements
        return Metrics(
            elements=n,
            cosine_similarity=cosine_from_sums(self.sum_xy, self.sum_xx, self.sum_yy),
            max_absolute_error=self.max_abs_diff,
            mean_absolute_error=self.sum_abs_diff / n if n else 0.0,
            root_mean_square_error=math.sqrt(self.sum_sq_diff / n) if n else 0.0,
            relative_euclidean_distance=red_from_sums(self.sum_sq_diff, self.sum_yy),
            accumulated_relative_error=self.rel_sum,
            max_relative_error=self.rel_max,
            mean_relative_error=self.rel_sum / n if n else 0.0,  # over every element, as msaccucmp
            kullback_leibler_divergence=self.kl_divergence(),
            actual_mean=self.moments_x.mean, actual_std=self.moments_x.std,
            golden_mean=self.moments_y.mean, golden_std=self.moments_y.std,
            allclose_pass_rate=self.close_count / n if n else 1.0,
            atol=self.atol, rtol=self.rtol,
            counts=ValueCounts(**self.counts),
        )


def _max(a: float, b: float) -> float:
    """max that keeps a NaN, as numpy's max over the whole tensor would."""
    return a if math.isnan(a) or a >= b else b


def _min(a: float, b: float) -> float:
    return a if math.isnan(a) or a <= b else b


_ACCUMULATOR_FLOATS = ("sum_xy", "sum_xx", "sum_yy", "sum_abs_diff", "sum_sq_diff", "max_abs_diff", "rel_sum",
                       "rel_max", "min_x", "max_x", "min_y", "max_y", "kl_sum_a", "kl_sum_b", "kl_sum_alogab")
_ACCUMULATOR_INTS = ("elements", "close_count", "kl_elements")


class AccumulatorColumns:
    """Many batches' accumulators (a shard's, in dataset order) as two flat arrays of numbers, until they are
    folded: a batch costs its numbers, not an accumulator with two moments and a dict (issue 42). `self[i]` makes
    batch i's accumulator again, field for field the one appended, so folding it is folding the original."""

    __slots__ = ("_floats", "_ints", "atol", "rtol")

    _FLOAT_WIDTH = len(_ACCUMULATOR_FLOATS) + 4  # and each side's moments: mean, m2
    _INT_WIDTH = len(_ACCUMULATOR_INTS) + 2 + len(_COUNT_NAMES)  # and each side's moments: count

    def __init__(self, atol: float, rtol: float) -> None:
        self.atol, self.rtol = atol, rtol
        self._floats = array("d")
        self._ints = array("q")

    def append(self, accumulator: MetricAccumulator) -> None:
        moments = (accumulator.moments_x, accumulator.moments_y)
        self._floats.extend([getattr(accumulator, name) for name in _ACCUMULATOR_FLOATS])
        self._floats.extend([value for m in moments for value in (m.mean, m.m2)])
        self._ints.extend([getattr(accumulator, name) for name in _ACCUMULATOR_INTS])
        self._ints.extend([m.count for m in moments])
        self._ints.extend([accumulator.counts[name] for name in _COUNT_NAMES])

    def __len__(self) -> int:
        return len(self._ints) // self._INT_WIDTH

    def __getitem__(self, index: int) -> MetricAccumulator:
        if not 0 <= index < len(self):
            raise IndexError(index)
        floats = self._floats[index * self._FLOAT_WIDTH:(index + 1) * self._FLOAT_WIDTH].tolist()
        ints = self._ints[index * self._INT_WIDTH:(index + 1) * self._INT_WIDTH].tolist()
        named = len(_ACCUMULATOR_FLOATS)
        accumulator = MetricAccumulator(atol=self.atol, rtol=self.rtol)
        for name, value in (*zip(_ACCUMULATOR_FLOATS, floats[:named], strict=True),
                            *zip(_ACCUMULATOR_INTS, ints[:3], strict=True)):
            setattr(accumulator, name, value)
        accumulator.moments_x = _Moments(count=ints[3], mean=floats[named], m2=floats[named + 1])
        accumulator.moments_y = _Moments(count=ints[4], mean=floats[named + 2], m2=floats[named + 3])
        accumulator.counts = dict(zip(_COUNT_NAMES, ints[5:], strict=True))
        return accumulator
