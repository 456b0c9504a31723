"""Samples grouped into fixed-size batches: every sample lands in exactly one file, the last batch padded."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import overload

import numpy as np

from binio.errors import ShapeError
from binio.positions import position, positions


@dataclass(frozen=True, slots=True)
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


class BatchPlan(Sequence[BatchSlot]):
    """The batch files `samples` samples fill, ``ceil(samples / batch)`` of them, only the last one padded; each
    `BatchSlot` made when asked for (50,000 of them held were 10 MB at batch 1)."""

    __slots__ = ("batch", "samples")

    def __init__(self, samples: int, batch: int) -> None:
        self.samples, self.batch = samples, batch

    def __len__(self) -> int:
        return -(-self.samples // self.batch)

    @overload
    def __getitem__(self, index: int) -> BatchSlot: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[BatchSlot, ...]: ...

    def __getitem__(self, index: int | slice) -> BatchSlot | tuple[BatchSlot, ...]:
        if isinstance(index, slice):
            return tuple(self[i] for i in positions(index, len(self)))
        index = position(index, len(self))
        start = index * self.batch
        return BatchSlot(index=index, start=start, stop=min(start + self.batch, self.samples), batch=self.batch)

    def __iter__(self) -> Iterator[BatchSlot]:
        for index in range(len(self)):
            yield self[index]


def plan_batches(samples: int, batch: int) -> BatchPlan:
    """The batch files `samples` samples fill, ``ceil(samples / batch)`` of them, only the last one padded."""
    if batch < 1:
        raise ShapeError(f"batch size {batch}: expected 1 or more")
    if samples < 1:
        raise ShapeError("no samples to write: the source is empty")
    return BatchPlan(samples, batch)


def padded_buffer(batch: int, sample_shape: tuple[int, ...], np_dtype: np.dtype) -> np.ndarray:
    """A zeroed batch buffer: rows the caller does not fill stay zero, which is the padding."""
    return np.zeros((batch, *sample_shape), dtype=np_dtype)


def iter_padded(array: np.ndarray, batch: int) -> Iterator[tuple[BatchSlot, np.ndarray]]:
    """Each batch of `array` (samples first), zero-padded to `batch` rows: for in-memory arrays and tests."""
    for slot in plan_batches(int(array.shape[0]), batch):
        buffer = padded_buffer(batch, tuple(array.shape[1:]), array.dtype)
        buffer[: slot.rows] = array[slot.start:slot.stop]
        yield slot, buffer
