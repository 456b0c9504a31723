"""Each metric against numbers worked out by hand, and the edge cases msaccucmp reports as fail reasons."""

from __future__ import annotations

import math

import numpy as np
import pytest

from infer.compare import metric_names
from infer.compare._judge import metrics as m

# NaN and inf are data to the metrics: numpy must not warn about them on the user's terminal.
pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")

X = np.array([1.0, 2.0, 3.0], dtype=np.float32)  # actual
Y = np.array([1.0, 2.0, 4.0], dtype=np.float32)  # golden


def test_cosine_by_hand() -> None:
    # Σxy = 1+4+12 = 17, ‖x‖ = √14, ‖y‖ = √21
    assert m.cosine_similarity(X, Y) == pytest.approx(17 / math.sqrt(14 * 21), abs=1e-15)


def test_absolute_errors_by_hand() -> None:
    assert m.max_absolute_error(X, Y) == 1.0
    assert m.mean_absolute_error(X, Y) == pytest.approx(1 / 3, abs=1e-15)
    assert m.root_mean_square_error(X, Y) == pytest.approx(math.sqrt(1 / 3), abs=1e-15)


def test_relative_euclidean_distance_by_hand() -> None:
    # Σ(x-y)² = 1, Σy² = 1+4+16 = 21
    assert m.relative_euclidean_distance(X, Y) == pytest.approx(math.sqrt(1 / 21), abs=1e-15)


def test_relative_errors_by_hand() -> None:
    # |1/1-1| = 0, |2/2-1| = 0, |3/4-1| = 0.25
    assert m.accumulated_relative_error(X, Y) == pytest.approx(0.25, abs=1e-15)
    assert m.max_relative_error(X, Y) == pytest.approx(0.25, abs=1e-15)
    assert m.mean_relative_error(X, Y) == pytest.approx(0.25 / 3, abs=1e-15)


def test_mean_relative_error_divides_by_every_element() -> None:
    # As msaccucmp: the element with a zero golden adds 0 and still counts, |4/2-1| / 2 (not / 1).
    assert m.mean_relative_error(np.array([5.0, 4.0]), np.array([0.0, 2.0])) == pytest.approx(0.5)


def test_kl_by_hand() -> None:
    # msaccucmp's direction, KL(actual ‖ golden); the zeros of the min-max scaling clamped to float32's eps e:
    # actual -> (x-1)/2 = [0, 1/2, 1] -> P = [e, 1/2, 1] / (3/2 + e)
    # golden -> (y-1)/3 = [0, 1/3, 1] -> Q = [e, 1/3, 1] / (4/3 + e)
    e = float(np.finfo(np.float32).eps)
    p = [v / (1.5 + e) for v in (e, 0.5, 1.0)]
    q = [v / (4 / 3 + e) for v in (e, 1 / 3, 1.0)]
    expected = sum(a * math.log(a / b) for a, b in zip(p, q, strict=True))
    assert m.kullback_leibler_divergence(X, Y) == pytest.approx(expected, abs=1e-12)
    assert m.kullback_leibler_divergence(X, Y) != pytest.approx(m.kullback_leibler_divergence(Y, X), abs=1e-4)
    assert m.kullback_leibler_divergence(Y, Y) == 0.0


def test_standard_deviation_by_hand() -> None:
    result = m.compute_metrics(X, Y, atol=0.0, rtol=0.0)
    assert (result.actual_mean, result.golden_mean) == (pytest.approx(2.0), pytest.approx(7 / 3))
    assert result.actual_std == pytest.approx(math.sqrt(2 / 3))
    assert result.golden_std == pytest.approx(math.sqrt(42 / 27))
    assert result.standard_deviation == "(2.000;0.816),(2.333;1.247)"  # msaccucmp's cell: three decimals
    small = m.compute_metrics(np.array([0.0004, -0.0004]), np.array([1.0, 1.0]), atol=0.0, rtol=0.0)
    assert small.standard_deviation == "(0.000;0.000),(1.000;0.000)"  # below 0.001 written 0, never -0.000


def test_allclose_pass_rate() -> None:
    assert m.allclose_pass_rate(X, Y, atol=0.0, rtol=0.0) == pytest.approx(2 / 3)
    assert m.allclose_pass_rate(X, Y, atol=0.0, rtol=0.25) == 1.0  # |3-4| <= 0.25·4


def test_cosine_is_capped_at_one() -> None:
    assert m.cosine_from_sums(1.0000001, 1.0, 1.0) == 1.0


def test_a_norm_at_most_eps_is_zero_as_msaccucmp_has_it() -> None:
    tiny = np.array([1e-20, -2e-20, 3e-20])
    assert m.cosine_similarity(-tiny, tiny) == 1.0  # both norms <= eps: two zero tensors
    assert math.isnan(m.cosine_similarity(tiny * 1e-13, X))  # a norm <= eps² against a real one: undefined
    assert m.cosine_similarity(tiny, X) == pytest.approx(m.cosine_similarity(tiny * 1e20, X))  # else computed
    assert m.relative_euclidean_distance(-tiny, tiny) == 0.0  # zero against zero
    assert m.relative_euclidean_distance(X, tiny) == math.inf  # a real tensor against a zero golden


def test_both_all_zero() -> None:
    zeros = np.zeros(4, dtype=np.float32)
    result = m.compute_metrics(zeros, zeros, atol=0.0, rtol=0.0)
    assert result.cosine_similarity == 1.0
    assert result.relative_euclidean_distance == 0.0
    assert result.kullback_leibler_divergence == 0.0  # two constant tensors: two uniform distributions
    assert (result.max_relative_error, result.mean_relative_error, result.accumulated_relative_error) == (0, 0, 0)


def test_actual_all_zero() -> None:
    result = m.compute_metrics(np.zeros(2), np.array([1.0, 2.0]), atol=0.0, rtol=0.0)
    assert math.isnan(result.cosine_similarity)
    assert result.relative_euclidean_distance == pytest.approx(1.0)  # sqrt(5/5)
    assert result.accumulated_relative_error == pytest.approx(2.0)  # |0/1-1| + |0/2-1|
    assert result.mean_relative_error == pytest.approx(1.0)


def test_golden_all_zero() -> None:
    result = m.compute_metrics(np.array([1.0, 2.0]), np.zeros(2), atol=0.0, rtol=0.0)
    assert math.isnan(result.cosine_similarity)
    assert result.relative_euclidean_distance == math.inf
    assert result.mean_relative_error == 0.0  # no element with |y| > eps
    assert result.max_absolute_error == 2.0


def test_relative_errors_skip_golden_below_eps() -> None:
    x, y = np.array([5.0, 3.0]), np.array([1e-17, 2.0])
    assert m.accumulated_relative_error(x, y) == pytest.approx(0.5)


def test_nan_in_actual() -> None:
    x = np.array([1.0, np.nan, 3.0], dtype=np.float32)
    result = m.compute_metrics(x, Y, atol=0.0, rtol=0.0)
    assert math.isnan(result.cosine_similarity) and math.isnan(result.max_absolute_error)
    assert math.isnan(result.kullback_leibler_divergence)
    assert result.counts.nan_actual == 1 and result.counts.nonfinite_actual_where_golden_finite == 1
    assert result.counts.fp16_overflow
    assert result.allclose_pass_rate == pytest.approx(1 / 3)


def test_inf_in_actual_where_fp16_overflowed() -> None:
    x = np.array([1.0, np.inf], dtype=np.float16)
    y = np.array([1.0, 70000.0], dtype=np.float32)
    result = m.compute_metrics(x, y, atol=0.0, rtol=0.0)
    assert result.max_absolute_error == math.inf
    assert result.counts.inf_actual == 1 and result.counts.beyond_fp16_golden == 1
    assert result.counts.fp16_overflow


def test_no_overflow_flag_for_ordinary_values() -> None:
    assert not m.value_counts(X, Y).fp16_overflow


def test_scalars() -> None:
    result = m.compute_metrics(np.float32(3.0), np.float32(2.0), atol=0.0, rtol=0.0)
    assert result.elements == 1
    assert result.cosine_similarity == 1.0  # 6 / (3·2)
    assert result.max_absolute_error == 1.0 and result.mean_relative_error == 0.5
    assert result.kullback_leibler_divergence == 0.0


def test_integers() -> None:
    result = m.compute_metrics(np.array([1, 2], dtype=np.int32), np.array([1, 3], dtype=np.int64), atol=0, rtol=0)
    assert result.max_absolute_error == 1.0
    assert result.cosine_similarity == pytest.approx(7 / math.sqrt(5 * 10))


def test_fp16_rounding_is_seen() -> None:
    golden = np.array([0.1, 0.2, 0.3], dtype=np.float32)
    actual = golden.astype(np.float16)
    error = m.max_absolute_error(actual, golden)
    assert 0 < error < 1e-4
    assert error == pytest.approx(float(np.max(np.abs(actual.astype(np.float64) - golden.astype(np.float64)))))


def test_empty() -> None:
    result = m.compute_metrics(np.zeros(0), np.zeros(0), atol=0.0, rtol=0.0)
    assert result.cosine_similarity == 1.0 and result.max_absolute_error == 0.0 and result.allclose_pass_rate == 1.0


def test_different_sizes_refused() -> None:
    with pytest.raises(ValueError, match="3 elements with 2"):
        m.cosine_similarity(X, Y[:2])


def test_json_writes_nan_as_text() -> None:
    result = m.compute_metrics(np.zeros(2), np.array([1.0, 2.0]), atol=0.0, rtol=0.0)
    assert result.to_json()["CosineSimilarity"] == "NaN"


def test_numbers_shown_to_people() -> None:
    assert metric_names.shown(0.9999999403953552, "CosineSimilarity") == "0.99999994"  # six digits would say 1
    assert metric_names.shown(0.9999999403953552) == "1"
    assert metric_names.shown(0.000181561234) == "0.000181561"
    assert metric_names.shown(math.nan, "CosineSimilarity") == "NaN" and metric_names.shown(math.inf) == "inf"
    assert metric_names.shown(0.9791666, "AllclosePassRate") == "97.92%"
