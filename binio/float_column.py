"""A sequence of floats held as 8 bytes each (an `array`), equal to the tuple of the same numbers: what a record
keeps one of per batch (run's per-batch latency), where a tuple of float objects cost 32 bytes a batch."""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Sequence
from typing import overload

from binio.positions import equal_items


class FloatColumn(Sequence[float]):
    """Floats in order, read-only; equal to (and hashed as) the tuple of the same numbers."""

    __slots__ = ("_values",)

    def __init__(self, values: Iterable[float] = ()) -> None:
        self._values = array("d", values)

    @classmethod
    def of(cls, values: Iterable[float]) -> FloatColumn:
        return values if isinstance(values, FloatColumn) else cls(values)

    def __len__(self) -> int:
        return len(self._values)

    @overload
    def __getitem__(self, index: int) -> float: ...

    @overload
    def __getitem__(self, index: slice) -> FloatColumn: ...

    def __getitem__(self, index: int | slice) -> float | FloatColumn:
        if isinstance(index, slice):
            return FloatColumn(self._values[index])
        return self._values[index]

    def __iter__(self) -> Iterator[float]:
        return iter(self._values)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FloatColumn):
            return self._values == other._values
        return equal_items(self, other)

    def __hash__(self) -> int:
        return hash(tuple(self._values))

    def __repr__(self) -> str:
        return f"FloatColumn({len(self)} values)"
