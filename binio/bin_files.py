"""An input's batch files as columns: what dataset.json lists, held in a few bytes a file.

A validation set at batch 1 is 50,000 files an input. As a tuple of `BinEntry` objects (each with its name and digest
as strings) they were about 230 bytes a file, held by every stage that read the dataset: dump-bin, run and compare
grew by that much per batch (issue 42). Here a file is its digest's 16 bytes and its row count; names are
kept only where they are not the ones dump-bin writes (``000000.bin``, ``000001.bin``, ...), and each `BinEntry` is
made when asked for.
"""

from __future__ import annotations

from array import array
from collections.abc import Container, Iterable, Iterator, Sequence
from pathlib import PurePath
from typing import Any, overload

from binio.bin_entry import BinEntry, bin_file_name, bin_file_number, bin_file_stem, is_hex_digest
from binio.digest import BIN_DIGEST, BIN_DIGEST_HEX
from binio.fields import LARGEST_INTEGER, why_outside
from binio.positions import equal_items, position, positions

_ROWS = "q"  # array type code of the row counts: signed 64-bit, as JSON integers are read
_DIGEST_BYTES = BIN_DIGEST_HEX // 2  # a digest held as its bytes, half its hex digits (0.8 MB at 50,000 files)


class BinFiles(Sequence[BinEntry]):
    """The files of one input, in order; equal to another sequence of the same entries."""

    __slots__ = ("_digests", "_names", "_rows")

    def __init__(self, names: tuple[str, ...] | None, digests: bytes | bytearray, rows: array[int]) -> None:
        # names None: the index-th file is bin_file_name(index), as dump-bin names them
        if len(digests) != _DIGEST_BYTES * len(rows) or (names is not None and len(names) != len(rows)):
            raise ValueError(f"columns of different lengths: {len(rows)} row counts, {len(digests)} digest bytes, "
                             f"{'named in order' if names is None else len(names)} names")
        if names is not None and all(name == bin_file_name(i) for i, name in enumerate(names)):
            names = None  # one spelling of "named in order", so that equal files compare equal
        self._names, self._digests, self._rows = names, digests, rows

    @classmethod
    def of(cls, entries: Iterable[BinEntry]) -> BinFiles:
        if isinstance(entries, BinFiles):
            return entries
        columns = BinFileColumns()
        for entry in entries:
            columns.add(entry.name, entry.digest, entry.rows)
        return columns.done()

    def __len__(self) -> int:
        return len(self._rows)

    @overload
    def __getitem__(self, index: int) -> BinEntry: ...

    @overload
    def __getitem__(self, index: slice) -> BinFiles: ...

    def __getitem__(self, index: int | slice) -> BinEntry | BinFiles:
        if isinstance(index, slice):
            return BinFiles.of(self[i] for i in positions(index, len(self)))
        return BinEntry(name=self.name(index), digest=self.digest(index), rows=self.rows(index))

    def _index(self, index: int) -> int:
        return position(index, len(self))

    def __iter__(self) -> Iterator[BinEntry]:
        for index in range(len(self)):
            yield self[index]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, BinFiles):
            return (self._digests == other._digests and self._rows == other._rows
                    and self._names == other._names)
        return equal_items(self, other)

    __hash__ = None  # type: ignore[assignment]  # equal to tuples of the same entries, which hash otherwise

    def __repr__(self) -> str:
        return f"BinFiles({len(self)} files)"

    def name(self, index: int) -> str:
        index = self._index(index)
        return bin_file_name(index) if self._names is None else self._names[index]

    def stem(self, index: int) -> str:
        """`Path.stem` of the index-th file's name (``000007`` of ``000007.bin``; ``.a`` of ``.a``)."""
        index = self._index(index)
        return bin_file_stem(index) if self._names is None else PurePath(self._names[index]).stem

    def digest(self, index: int) -> str:
        return _digest_at(self._digests, self._index(index))

    def rows(self, index: int) -> int:
        return self._rows[self._index(index)]

    @property
    def in_order(self) -> bool:
        """Whether the files are named as dump-bin names them: the index-th is ``bin_file_name(index)``."""
        return self._names is None

    def name_set(self) -> Container[str]:
        """The file names, for membership tests: read from the name itself where the files are in order (no set of
        50,000 names)."""
        return bin_names(len(self)) if self._names is None else frozenset(self._names)


def bin_names(count: int) -> Container[str]:
    """``bin_file_name(0)`` ... ``bin_file_name(count - 1)``, as a container that holds none of them."""
    return _InOrderNames(count)


class _InOrderNames(Container[str]):

    __slots__ = ("count",)

    def __init__(self, count: int) -> None:
        self.count = count

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and 0 <= bin_file_number(name) < self.count


class BinFileColumns:
    """Builds a `BinFiles` one file at a time, in order."""

    __slots__ = ("_digests", "_names", "_rows")

    def __init__(self) -> None:
        self._names: list[str] | None
        self._digests: bytearray
        self._rows: array[int]
        self._start()

    def _start(self) -> None:
        self._names = None  # until a file is named other than in order
        self._digests = bytearray()
        self._rows = array(_ROWS)

    def add(self, name: str, digest: str, rows: int) -> None:
        index = len(self._rows)
        if not is_hex_digest(digest):
            raise ValueError(f"{name}: {digest!r} is not a digest of {BIN_DIGEST_HEX} lower-case hex digits")
        if self._names is None and name != bin_file_name(index):
            self._names = [bin_file_name(i) for i in range(index)]
        if self._names is not None:
            self._names.append(name)
        self._digests += bytes.fromhex(digest)
        self._rows.append(rows)

    def done(self) -> BinFiles:
        """The files added so far; the builder starts afresh (its columns are handed over, not copied: at the end of
        a dump they are what a stage holds most of)."""
        names, digests, rows = self._names, self._digests, self._rows
        self._start()
        return BinFiles(None if names is None else tuple(names), digests, rows)


class FileRow(int):
    """A file entry of dataset.json as the JSON reader met it: its place in the `FileRowReader`'s columns. An int
    (one object of 44 bytes where an object holding an int was two of 68: 50,000 of them stand in the lists while
    dataset.json is read)."""

    __slots__ = ()

    @property
    def index(self) -> int:
        return int(self)


class FileRowReader:
    """The JSON reader's object hook for dataset.json: every object shaped as dump-bin writes a file entry (exactly
    a bare name, a digest of hex digits and a row count in range) goes into columns as it is parsed, a `FileRow`
    left in its place; any other object is kept as it is.

    Read as dicts, 50,000 entries were 16 MB at once, and the largest thing a stage held (run, compare) before
    it had read a bin. Parsed this way they are the JSON decoder's text for a moment and 40 bytes each after."""

    def __init__(self) -> None:
        self.restart()

    def restart(self) -> None:
        """Forgets every row taken (for a document read again from its start)."""
        # Each row's name as the number it spells where it is one dump-bin gives (``bin_file_name(n)``), else -1 and
        # the name kept aside: the decoder's 50,000 name strings are let go as they are read, not held until the
        # lists are put together.
        self._numbers: array[int] = array(_ROWS)
        self._other_names: dict[int, str] = {}
        self._digests = bytearray()
        self._rows: array[int] = array(_ROWS)

    def __call__(self, item: dict[str, Any]) -> Any:
        if len(item) != 3:
            return item
        name, digest, rows = item.get("name"), item.get(BIN_DIGEST), item.get("rows")
        if (type(name) is not str or type(digest) is not str or type(rows) is not int or not is_hex_digest(digest)
                or not 0 <= rows <= LARGEST_INTEGER or why_outside(name, bare=True) is not None):
            return item
        index = len(self._rows)
        number = bin_file_number(name)
        if number < 0:
            self._other_names[index] = name
        self._numbers.append(number)
        self._digests += bytes.fromhex(digest)
        self._rows.append(rows)
        return FileRow(index)

    def _name(self, index: int) -> str:
        number = self._numbers[index]
        return bin_file_name(number) if number >= 0 else self._other_names[index]

    def files(self, items: list[Any]) -> BinFiles | None:
        """The files a list of entries stands for when each was taken into the columns, in the order read; None
        when any was not (the entries are then read one by one, and what is refused is named)."""
        if not items or any(type(item) is not FileRow for item in items):
            return None
        start, stop = items[0].index, items[-1].index + 1
        if stop - start != len(items) or any(item.index != start + k for k, item in enumerate(items)):
            return None
        in_order = self._numbers[start:stop] == array(_ROWS, range(len(items)))
        names = None if in_order else tuple(self._name(index) for index in range(start, stop))
        return BinFiles(names, bytes(self._digests[start * _DIGEST_BYTES:stop * _DIGEST_BYTES]),
                        self._rows[start:stop])

    def restored(self, value: Any) -> Any:
        """`value` with every `FileRow` in it the object it was read from: for what is read as plain JSON."""
        if type(value) is FileRow:
            return {"name": self._name(value.index), BIN_DIGEST: self.digest(value.index),
                    "rows": self._rows[value.index]}
        if isinstance(value, dict):
            return {key: self.restored(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self.restored(item) for item in value]
        return value

    def digest(self, index: int) -> str:
        return _digest_at(self._digests, index)


def _digest_at(digests: bytes | bytearray, index: int) -> str:
    """The index-th digest of a column of them (_DIGEST_BYTES each), in hex."""
    return digests[index * _DIGEST_BYTES:(index + 1) * _DIGEST_BYTES].hex()
