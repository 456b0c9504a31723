"""Tensor stats keep NaN and inf apart from min/max/mean, and merge across files exactly."""

from __future__ import annotations

import numpy as np
import pytest

from binio.info import merge_stats, tensor_stats


def test_nan_and_inf_are_counted_and_left_out_of_min_max_mean() -> None:
    stats = tensor_stats(np.array([1.0, np.nan, 3.0, np.inf, -np.inf], dtype=np.float32))
    assert (stats.nan, stats.inf, stats.min, stats.max, stats.mean) == (1, 2, 1.0, 3.0, 2.0)


def test_all_nan_has_no_min() -> None:
    stats = tensor_stats(np.full(3, np.nan))
    assert stats.min is None and stats.mean is None and stats.nan == 3


def test_merge_gives_the_stats_of_the_concatenation() -> None:
    parts = [np.array([1, 2, 3], np.int32), np.array([10], np.int32)]
    merged = merge_stats([tensor_stats(p) for p in parts], (2, 2))
    whole = np.concatenate(parts)
    assert (merged.min, merged.max, merged.values) == (1.0, 10.0, 4)
    assert merged.mean == pytest.approx(whole.mean())
