"""Streaming over batches gives the all-in-memory metrics, whatever the batch split."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from infer.compare._judge.accumulate import MetricAccumulator
from infer.compare._judge.metrics import Metrics, compute_metrics
from infer.compare.metric_names import SCALAR_METRICS

# NaN and inf are data to the metrics: numpy must not warn about them on the user's terminal.
pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")


def _stream(x: np.ndarray, y: np.ndarray, cuts: list[int], *, merge: bool) -> Metrics:
    accumulator = MetricAccumulator(atol=1e-3, rtol=1e-2)
    bounds = [0, *sorted(c % (x.size + 1) for c in cuts), x.size]
    pieces = [(x[a:b], y[a:b]) for a, b in itertools.pairwise(bounds)]
    for a, b in pieces:
        if merge:
            part = MetricAccumulator(atol=1e-3, rtol=1e-2)
            part.add(a, b)
            accumulator.merge(part)
        else:
            accumulator.add(a, b)
    for a, b in pieces:
        accumulator.add_kl(a, b)
    return accumulator.result()


def _assert_same(streamed: Metrics, direct: Metrics) -> None:
    for name in SCALAR_METRICS:
        assert streamed.value(name) == pytest.approx(direct.value(name), rel=1e-9, abs=1e-9, nan_ok=True), name
    for name in ("actual_mean", "actual_std", "golden_mean", "golden_std"):
        got, expected = getattr(streamed, name), getattr(direct, name)
        assert got == pytest.approx(expected, rel=1e-9, abs=1e-9, nan_ok=True), name
    assert streamed.counts == direct.counts
    assert streamed.elements == direct.elements


finite = st.floats(-1e4, 1e4, allow_nan=False, width=32)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(
    data=hnp.arrays(np.float32, st.integers(1, 200), elements=finite),
    noise=st.floats(0, 1),
    cuts=st.lists(st.integers(0, 10_000), max_size=8),
    merge=st.booleans(),
)
def test_streaming_equals_all_in_memory(data: np.ndarray, noise: float, cuts: list[int], merge: bool) -> None:
    golden = data
    actual = (data + noise * np.sin(np.arange(data.size, dtype=np.float32) * 7.0)).astype(np.float32)
    _assert_same(_stream(actual, golden, cuts, merge=merge), compute_metrics(actual, golden, atol=1e-3, rtol=1e-2))


@pytest.mark.parametrize("case", ["zeros", "actual_zero", "nan", "inf", "fp16"])
def test_streaming_edge_cases(case: str) -> None:
    y = np.linspace(-3, 5, 50).astype(np.float32)
    x = {"zeros": np.zeros(50), "actual_zero": np.zeros(50), "nan": np.where(np.arange(50) == 7, np.nan, y),
         "inf": np.where(np.arange(50) == 9, np.inf, y), "fp16": y.astype(np.float16)}[case]
    if case == "zeros":
        y = np.zeros(50, dtype=np.float32)
    _assert_same(_stream(np.asarray(x), y, [10, 33], merge=True), compute_metrics(x, y, atol=1e-3, rtol=1e-2))


def test_kl_needs_its_second_pass() -> None:
    accumulator = MetricAccumulator(atol=0.0, rtol=0.0)
    accumulator.add(np.ones(3), np.arange(3.0))
    with pytest.raises(RuntimeError, match="KL pass"):
        accumulator.result()
