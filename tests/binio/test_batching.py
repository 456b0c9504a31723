"""Batching puts every sample in exactly one file, in order; only the last file is padded, with zeros."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from binio.batching import iter_padded, plan_batches
from binio.errors import ShapeError


@pytest.mark.slow
@given(st.integers(1, 500), st.integers(1, 64))
def test_every_sample_lands_in_exactly_one_batch(samples: int, batch: int) -> None:
    slots = plan_batches(samples, batch)
    covered = [i for slot in slots for i in range(slot.start, slot.stop)]
    assert covered == list(range(samples))
    assert [s.index for s in slots] == list(range(len(slots)))
    assert all(s.padding == 0 for s in slots[:-1])
    assert slots[-1].padding == len(slots) * batch - samples
    assert 0 <= slots[-1].padding < batch


@pytest.mark.slow
@given(st.integers(1, 40), st.integers(1, 9))
def test_padded_batches_hold_the_samples_then_zeros(samples: int, batch: int) -> None:
    data = np.arange(1, samples * 3 + 1, dtype=np.int32).reshape(samples, 3)
    pieces = list(iter_padded(data, batch))
    stacked = np.concatenate([buffer for _, buffer in pieces])
    assert all(buffer.shape == (batch, 3) for _, buffer in pieces)
    np.testing.assert_array_equal(stacked[:samples], data)
    assert not stacked[samples:].any()


def test_empty_source_and_bad_batch_are_refused() -> None:
    with pytest.raises(ShapeError, match="no samples to write"):
        plan_batches(0, 2)
    with pytest.raises(ShapeError, match="batch size 0: expected 1 or more"):
        plan_batches(3, 0)
