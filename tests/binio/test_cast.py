"""Checked casts count what the cast loses and measure the largest error among what it keeps."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from binio.cast import CastReport, checked_cast, checked_cast_into


def test_float32_to_float16_counts_overflow_nan_and_inf_apart() -> None:
    source = np.array([1.0, 70000.0, -1e6, np.nan, np.inf, 0.1], dtype=np.float32)
    cast, report = checked_cast(source, "float16")
    assert cast.dtype == np.float16
    assert (report.overflow, report.nan, report.inf, report.lossy) == (2, 1, 1, 4)
    assert report.max_error == pytest.approx(abs(float(np.float16(0.1)) - float(np.float32(0.1))))
    assert report.describe_loss() == "2 overflow float16 (|x| > 65504), 1 NaN, 1 inf"


def test_float_to_int_counts_truncation_and_range() -> None:
    cast, report = checked_cast(np.array([1.0, 2.5, 300.0, -1.0, np.nan], dtype=np.float64), "uint8")
    assert (report.truncated, report.out_of_range, report.nan) == (1, 2, 1)
    assert cast[:2].tolist() == [1, 2]
    assert report.max_error == 0.5


def test_int_to_narrower_int_counts_out_of_range() -> None:
    _, report = checked_cast(np.array([0, 127, 128, -129], dtype=np.int64), "int8")
    assert report.out_of_range == 2 and report.truncated == 0


def test_bool_target_accepts_only_zero_and_one() -> None:
    cast, report = checked_cast(np.array([0, 1, 2], dtype=np.int32), "bool")
    assert cast.tolist() == [False, True, True] and report.out_of_range == 1


def test_clean_identity_cast_reports_nothing() -> None:
    source = np.linspace(-3, 3, 1000, dtype=np.float32)
    cast, report = checked_cast(source, "float32")
    assert report == CastReport("float32", "float32", values=1000)
    np.testing.assert_array_equal(cast, source)


def test_cast_into_refuses_a_mismatched_buffer() -> None:
    with pytest.raises(ValueError, match="cast of 3 values into a buffer of 4"):
        checked_cast_into(np.zeros(4, np.float16), np.zeros(3, np.float32))


def test_merge_adds_counts_and_keeps_the_largest_error() -> None:
    a = CastReport("float32", "float16", values=10, overflow=1, max_error=0.5)
    b = CastReport("float32", "float16", values=5, nan=2, max_error=0.25)
    merged = CastReport("", "float16").merge(a).merge(b)
    assert (merged.values, merged.lossy, merged.max_error, merged.source_dtype) == (15, 3, 0.5, "float32")


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(hnp.arrays(np.float32, hnp.array_shapes(max_dims=3, max_side=40),
                  elements=st.floats(-65504, 65504, width=32)))
def test_values_within_fp16_range_are_never_counted_lossy(source: np.ndarray) -> None:
    cast, report = checked_cast(source, "float16")
    assert report.lossy == 0
    expected = float(np.abs(source.astype(np.float16).astype(np.float64) - source.astype(np.float64)).max()) \
        if source.size else 0.0
    assert report.max_error == pytest.approx(expected, rel=1e-6, abs=1e-12)
    np.testing.assert_array_equal(cast, source.astype(np.float16))


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(np.float64, st.integers(0, 300), elements=st.floats(allow_nan=True, allow_infinity=True)))
def test_every_nonfinite_fp16_result_is_counted(source: np.ndarray) -> None:
    cast, report = checked_cast(source, "float16")
    assert report.overflow + report.nan + report.inf == int((~np.isfinite(cast)).sum())
