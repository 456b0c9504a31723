"""`check_unchanged`: what a cast to an array's own dtype reports, taken without the copy, must be exactly what
`checked_cast_into` reports for that cast: dump-bin writes such batches straight from the source on its word."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from binio.cast import CastReport, check_unchanged, checked_cast_into


def _copied_report(array: np.ndarray) -> CastReport:
    return checked_cast_into(np.empty_like(array), array)


@pytest.mark.parametrize("dtype_name", ["float16", "float32", "float64"])
def test_nan_and_inf_are_counted_as_the_copying_cast_counts_them(dtype_name: str) -> None:
    array = np.linspace(-5, 5, 300_000).astype(dtype_name)  # several of the cast's chunks
    array[[7, 200_000]] = np.nan
    array[[11, 150_000, 299_999]] = [np.inf, -np.inf, np.inf]
    report = check_unchanged(array.reshape(1000, 300))
    assert (report.nan, report.inf, report.overflow, report.lossy, report.max_error) == (2, 3, 0, 5, 0.0)
    assert report == _copied_report(array)
    assert report.describe_loss() == "2 NaN, 3 inf"


@pytest.mark.parametrize("array", [np.arange(-50, 50, dtype=np.int32), np.array([0, 255, 7], np.uint8),
                                   np.array([True, False]), np.zeros((0, 3), np.float32)],
                         ids=["int32", "uint8", "bool", "empty"])
def test_integers_bools_and_empty_arrays_are_clean(array: np.ndarray) -> None:
    report = check_unchanged(array)
    assert report == _copied_report(array) == CastReport(array.dtype.name, array.dtype.name, values=array.size)


def test_a_strided_array_is_refused() -> None:
    with pytest.raises(ValueError, match="C-contiguous"):
        check_unchanged(np.zeros((4, 4), np.float32)[:, ::2])


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(hnp.arrays(np.float32, hnp.array_shapes(max_dims=3, max_side=40),
                  elements=st.floats(width=32, allow_nan=True, allow_infinity=True)))
def test_any_float32_array_gets_the_copying_casts_report(array: np.ndarray) -> None:
    assert check_unchanged(np.ascontiguousarray(array)) == _copied_report(array)
