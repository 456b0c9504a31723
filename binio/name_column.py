"""Names held as one string and where each ends: what dataset.json records per sample (the image each was made
from), read back by every stage that reads the manifest.

At batch 1 an ImageNet validation set is 50,000 names. As a list of strings they were 3.3 MB held by run and compare
all along (issue 42); here they are their characters and 8 bytes each, about a quarter of that.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, TypeGuard, overload

from binio.positions import equal_items, position, positions


def is_name_list(value: Any) -> TypeGuard[Sequence[Any]]:
    """A JSON list as a manifest holds it: a list as read, or a `NameColumn` where it was read as names."""
    return isinstance(value, (list, NameColumn))


_JOINED_BY = 4096


class NameColumn(Sequence[str]):
    """Strings in order, read-only; equal to (and hashed as) the tuple of the same strings."""

    __slots__ = ("_ends", "_text")

    def __init__(self, names: Iterable[str] = ()) -> None:
        ends, at, parts, pieces = array("q"), 0, [], []
        for name in names:
            at += len(name)
            ends.append(at)
            parts.append(name)
            if len(parts) == _JOINED_BY:  # joined as they come: never every name held as a string of its own
                pieces.append("".join(parts))
                parts.clear()
        self._text = "".join([*pieces, *parts])
        self._ends = ends

    @classmethod
    def of(cls, names: Iterable[str]) -> NameColumn:
        return names if isinstance(names, NameColumn) else cls(names)

    def __len__(self) -> int:
        return len(self._ends)

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> NameColumn: ...

    def __getitem__(self, index: int | slice) -> str | NameColumn:
        if isinstance(index, slice):
            return NameColumn(self[k] for k in positions(index, len(self)))
        index = position(index, len(self))
        return self._text[self._ends[index - 1] if index else 0:self._ends[index]]

    def __iter__(self) -> Iterator[str]:
        start = 0
        for end in self._ends:
            yield self._text[start:end]
            start = end

    def __eq__(self, other: object) -> bool:
        if isinstance(other, NameColumn):
            return self._ends == other._ends and self._text == other._text
        return equal_items(self, other)

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"NameColumn({len(self)} names)"
