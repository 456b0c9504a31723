"""The latency figures of run.json agree with numpy's, value for value."""

from __future__ import annotations

import statistics

import numpy as np
import pytest

from infer.run._latency import mean, percentile


@pytest.mark.parametrize("size", [1, 2, 3, 7, 50, 101])
def test_percentile_is_numpys_linear_method(size: int) -> None:
    rng = np.random.default_rng(size)
    values = (rng.exponential(size=size) * rng.choice([1e-3, 1.0, 1e3], size=size)).tolist()
    for q in (0, 1, 25, 50, 90, 99, 99.9, 100, float(rng.uniform(0, 100))):
        assert percentile(values, q) == float(np.percentile(values, q)), (size, q)


def test_percentile_ignores_input_order_and_stays_within_the_ranks() -> None:
    values = [5.0, 1.0, 3.0, 2.0]
    assert percentile(values, 50) == 2.5
    assert percentile(values, 0) == 1.0 and percentile(values, 100) == 5.0
    assert percentile([0.1, 0.1, 0.1], 37.0) == 0.1


def test_mean_is_exact() -> None:
    values = [1e16, 1.0, -1e16, 3.0]
    assert mean(values) == statistics.fmean(values) == 1.0
