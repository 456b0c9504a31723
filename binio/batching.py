"""Samples grouped into fixed-size batches: every sample lands in exactly one file, the last batch padded."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from binio.errors import ShapeError


@dataclass(frozen=True)
class BatchSlot:
    """The index-th batch file: samples ``[start, stop)``; its remaining ``padding`` rows are zeros."""

    index: int
    start: int
    stop: int
    batch: int

    @property
    def rows(self) -> int:
        return self.stop - self.start

    @property
    def padding(self) -> int:
        return self.batch - self.rows


def plan_batches(samples: int, batch: int) -> tuple[BatchSlot, ...]:
    """The batch files `samples` samples fill, ``ceil(samples / batch)`` of them, only the last one padded."""
    if batch < 1:
        raise ShapeError(f"batch size {batch}: expected 1 or more")
    if samples < 1:
        raise ShapeError("no samples to write: the source is empty")
    return tuple(
        BatchSlot(index=i, start=start, stop=min(start + batch, samples), batch=batch)
        for i, start in enumerate(range(0, samples, batch))
    )


def padded_buffer(batch: int, sample_shape: tuple[int, ...], np_dtype: np.dtype) -> np.ndarray:
    """A zeroed batch buffer: rows the caller does not fill stay zero, which is the padding."""
    return np.zeros((batch, *sample_shape), dtype=np_dtype)


def iter_padded(array: np.ndarray, batch: int) -> Iterator[tuple[BatchSlot, np.ndarray]]:
    """Each batch of `array` (samples first), zero-padded to `batch` rows: for in-memory arrays and tests."""
    for slot in plan_batches(int(array.shape[0]), batch):
        buffer = padded_buffer(batch, tuple(array.shape[1:]), array.dtype)
        buffer[: slot.rows] = array[slot.start:slot.stop]
        yield slot, buffer
