"""The stems of a dataset's batch files (``000000``, ``000001``, ...), in order: what run's outputs are named by,
and what run.json and compare's reports list.

At batch 1 a validation set is 50,000 batches. As a tuple of strings the stems cost about 60 bytes each, a set or a
dict of them for membership as much again, held by every stage that walks the batches (issue 42). Where they are the
stems dump-bin gives (``bin_file_stem(k)`` for k in a range), here they are that range: each is made when asked
for, membership and position are read from the stem itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import overload

from binio.bin_entry import bin_file_stem, bin_stem_number
from binio.positions import equal_items, position, positions


class FileStems(Sequence[str]):
    """Stems in order; equal to any sequence of the same strings. Membership and `place` take no walk. Where a stem
    is given twice (a run.json written by hand) `place` finds its last; `repeats` says so."""

    __slots__ = ("_numbers", "_places", "_stems")

    def __init__(self, stems: Iterable[str] | range | int = ()) -> None:
        # A range (an int n: range(n)): the stems dump-bin gives those files, ``bin_file_stem(k)`` for k in it; else
        # the stems as given, kept only where they are not such a run.
        if isinstance(stems, int):
            stems = range(stems)
        if isinstance(stems, range):
            numbers, given = (stems if stems.step == 1 else None), (None if stems.step == 1 else
                                                                   tuple(map(bin_file_stem, stems)))
        else:
            given = stems if isinstance(stems, tuple) else tuple(stems)
            numbers = _run_of(given)
            if numbers is not None:
                given = None
        self._numbers, self._stems = numbers, given
        self._places: dict[str, int] | None = None  # stem -> position, made on first use where stems are given

    @classmethod
    def of(cls, stems: Iterable[str]) -> FileStems:
        return stems if isinstance(stems, FileStems) else cls(stems)

    @property
    def numbers(self) -> range | None:
        """The k of each ``bin_file_stem(k)`` where the stems are such a run, held as it; else None."""
        return self._numbers

    def __len__(self) -> int:
        return len(self._numbers) if self._numbers is not None else len(self._stems or ())

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> FileStems: ...

    def __getitem__(self, index: int | slice) -> str | FileStems:
        if isinstance(index, slice):
            if self._numbers is not None and positions(index, len(self)).step == 1:
                return FileStems(self._numbers[index])
            return FileStems(self[k] for k in positions(index, len(self)))
        if self._numbers is not None:
            return bin_file_stem(self._numbers[position(index, len(self))])
        assert self._stems is not None
        return self._stems[position(index, len(self))]

    def __iter__(self) -> Iterator[str]:
        if self._numbers is not None:
            return map(bin_file_stem, self._numbers)
        return iter(self._stems or ())

    def __contains__(self, stem: object) -> bool:
        return isinstance(stem, str) and self.place(stem) is not None

    def place(self, stem: str) -> int | None:
        """The position of `stem`; None where it is not one of these."""
        if self._numbers is not None:
            number = bin_stem_number(stem)
            return number - self._numbers.start if number in self._numbers else None
        return self._indexed().get(stem)

    def _indexed(self) -> dict[str, int]:
        if self._places is None:
            self._places = {name: k for k, name in enumerate(self._stems or ())}
        return self._places

    def repeats(self) -> bool:
        """Whether a stem is given twice (never, where they are a run of dump-bin's)."""
        return self._numbers is None and len(self._indexed()) != len(self)

    def index(self, stem: object, start: int = 0, stop: int | None = None) -> int:
        found = self.place(stem) if isinstance(stem, str) else None
        end = len(self) if stop is None else stop
        if found is None or not start <= found < end:
            raise ValueError(f"{stem!r} is not one of the stems")
        return found

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FileStems):
            return self._numbers == other._numbers and self._stems == other._stems
        return equal_items(self, other)

    def __hash__(self) -> int:
        return hash(tuple(self))  # as the tuple of the same stems hashes: equal values, equal hashes

    def __repr__(self) -> str:
        run = "" if not self._numbers else f", bin_file_stem({self._numbers.start}..{self._numbers.stop - 1})"
        return f"FileStems({len(self)} stems{run})"


def _run_of(stems: tuple[str, ...]) -> range | None:
    """The range of k where `stems` are ``bin_file_stem(k)`` for k in it, one after another; None where they are
    not (none at all is the empty run from 0)."""
    first = bin_stem_number(stems[0]) if stems else 0
    if first < 0 or any(bin_stem_number(stem) != first + k for k, stem in enumerate(stems)):
        return None
    return range(first, first + len(stems))


class StemList(Sequence[str]):
    """Stems appended one at a time (the batches a run or a shard of compare has done, in order), held as a range
    while they are a run of dump-bin's stems, as strings from the first that is not."""

    __slots__ = ("_given", "_numbers")

    def __init__(self) -> None:
        self._numbers: range | None = None  # None before the first stem, and once one is not in the run
        self._given: list[str] | None = None

    def append(self, stem: str) -> None:
        if self._given is None:
            number = bin_stem_number(stem)
            if self._numbers is None and number >= 0:
                self._numbers = range(number, number + 1)
                return
            if self._numbers is not None and number == self._numbers.stop:
                self._numbers = range(self._numbers.start, number + 1)
                return
            self._given = list(map(bin_file_stem, self._numbers or ()))
            self._numbers = None
        self._given.append(stem)

    def extend(self, stems: Iterable[str]) -> None:
        for stem in stems:
            self.append(stem)

    def frozen(self) -> FileStems:
        return FileStems(self._numbers if self._numbers is not None else tuple(self._given or ()))

    def __len__(self) -> int:
        return len(self._numbers) if self._numbers is not None else len(self._given or ())

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> FileStems: ...

    def __getitem__(self, index: int | slice) -> str | FileStems:
        if self._given is not None and not isinstance(index, slice):
            return self._given[index]
        return self.frozen()[index]  # a range's: no copy

    def __iter__(self) -> Iterator[str]:
        return iter(self._given) if self._given is not None else iter(self.frozen())

    def __eq__(self, other: object) -> bool:
        return self.frozen() == other

    __hash__ = None  # type: ignore[assignment]  # it changes as stems are appended

    def __repr__(self) -> str:
        return f"StemList({len(self)} stems)"
