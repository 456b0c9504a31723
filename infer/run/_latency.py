"""Latency figures of a run (mean, p50, p99) from per-run milliseconds, in plain Python.

`np.percentile` would do, but its first call imports ``numpy.ma`` and friends (about 30 ms, as much as a small
model's batch) for a list of a few hundred floats; this is numpy's default method ("linear"), value for value.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def mean(values: Sequence[float]) -> float:
    """The mean of a non-empty list, summed exactly (as `statistics.fmean`)."""
    return math.fsum(values) / len(values)


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) of a non-empty list, interpolated linearly between the two nearest ranks."""
    ordered = sorted(float(value) for value in values)
    position = (q / 100.0) * (len(ordered) - 1)
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    low, high = ordered[below], ordered[above]
    fraction = position - below
    step = high - low
    # From the nearer rank, as numpy does, so the result never leaves [low, high] by a rounding.
    return high - step * (1.0 - fraction) if fraction >= 0.5 else low + step * fraction
