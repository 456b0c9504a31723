"""`MetricsColumns` gives back each batch's `Metrics` as appended, bit for bit, whether its counts of NaN, inf and
fp16 range are all 0 (not held) or not, and however the rows were split between shards."""

from __future__ import annotations

import math
import struct
from dataclasses import fields

from hypothesis import given
from hypothesis import strategies as st

from infer.compare._judge.metrics import Metrics, MetricsColumns, ValueCounts

_FLOATS = [f.name for f in fields(Metrics) if f.name not in ("elements", "counts", "atol", "rtol")]
_COUNTS = [f.name for f in fields(ValueCounts)]

_METRICS = st.builds(
    lambda elements, floats, counts: Metrics(elements=elements, atol=1e-5, rtol=1e-3,
                                             counts=ValueCounts(**dict(zip(_COUNTS, counts, strict=True))),
                                             **dict(zip(_FLOATS, floats, strict=True))),
    st.integers(0, 2**40), st.lists(st.floats(), min_size=len(_FLOATS), max_size=len(_FLOATS)),
    st.one_of(st.just([0] * len(_COUNTS)),
              st.lists(st.integers(0, 2**40), min_size=len(_COUNTS), max_size=len(_COUNTS))))


def _bits(metrics: Metrics) -> tuple[object, ...]:
    """Every number of `metrics`, floats as their bytes (NaN equal to itself)."""
    return (metrics.elements, metrics.counts, metrics.atol, metrics.rtol,
            *(struct.pack("<d", getattr(metrics, name)) for name in _FLOATS))


@given(st.lists(_METRICS, max_size=12), st.integers(0, 12))
def test_each_batch_comes_back_bit_for_bit_however_the_shards_split(rows: list[Metrics], cut: int) -> None:
    whole = MetricsColumns(1e-5, 1e-3)
    for metrics in rows:
        whole.append(metrics)
    first, second = MetricsColumns(1e-5, 1e-3), MetricsColumns(1e-5, 1e-3)
    for k, metrics in enumerate(rows):
        (first if k < cut else second).append(metrics)
    first.extend(second)
    assert len(whole) == len(first) == len(rows) and whole == first
    for k, metrics in enumerate(rows):
        assert _bits(whole[k]) == _bits(first[k]) == _bits(metrics)
    cosines = whole.values("cosine_similarity")
    assert [struct.pack("<d", v) for v in cosines] == [struct.pack("<d", m.cosine_similarity) for m in rows]


def test_counts_are_held_only_for_the_batches_that_have_them() -> None:
    columns = MetricsColumns(1e-5, 1e-3)
    plain = Metrics(elements=10, atol=1e-5, rtol=1e-3, counts=ValueCounts(),
                    **dict.fromkeys(_FLOATS, 0.5))
    for _ in range(1000):
        columns.append(plain)
    columns.append(Metrics(elements=10, atol=1e-5, rtol=1e-3, counts=ValueCounts(nan_actual=3),
                           **dict.fromkeys(_FLOATS, math.nan)))
    assert columns[1000].counts.nan_actual == 3 and columns[999].counts == ValueCounts()
    assert len(columns._counted) == 1 and len(columns._counts) == len(_COUNTS)  # one batch's counts, not 1,001
