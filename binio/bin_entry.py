"""One batch file of one input as dataset.json lists it, and the names dump-bin gives the files."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from binio.digest import BIN_DIGEST, BIN_DIGEST_HEX, digest_bytes, digest_file
from binio.fields import Fields, shown

FILE_DIGITS = 6
_HEX_DIGITS = frozenset("0123456789abcdef")


def is_hex_digest(text: str) -> bool:
    """Whether `text` is a digest as dataset.json holds one: BIN_DIGEST_HEX lower-case hex digits, as digest_file
    (and xxh128sum) spells them; another spelling would match no file's digest later, far from here."""
    return len(text) == BIN_DIGEST_HEX and _HEX_DIGITS.issuperset(text)


def bin_file_name(index: int) -> str:
    """The name of the index-th batch file: ``000000.bin``, in the order both msame and ais_bench read."""
    return f"{index:0{FILE_DIGITS}d}.bin"


def bin_file_stem(index: int) -> str:
    """The stem of the index-th batch file (``000000``): what run's outputs are named by."""
    return f"{index:0{FILE_DIGITS}d}"


def bin_stem_number(stem: str) -> int:
    """The n of a stem spelled ``bin_file_stem(n)``; -1 for any other text (``7``, ``0000007``, ``+00007``)."""
    if not (stem.isascii() and stem.isdigit()):
        return -1
    number = int(stem)
    return number if bin_file_stem(number) == stem else -1


def bin_file_number(name: str) -> int:
    """The n of a name spelled ``bin_file_name(n)``; -1 for any other name."""
    return bin_stem_number(name[:-len(".bin")]) if name.endswith(".bin") else -1


@dataclass(frozen=True, slots=True)  # one per batch file: 50,000 in a validation set at batch 1, no __dict__ each
class BinEntry:
    """One batch file of one input."""

    name: str  # file name inside the input's folder
    digest: str  # xxh128 (binio.digest), hex, of the file's bytes
    rows: int  # real samples in this file; the rest of its batch is padding

    def __post_init__(self) -> None:
        # Another digest given in its place (a sha256) would fail every check later, far from here.
        if not is_hex_digest(self.digest):
            raise ValueError(f"{self.name}: {self.digest!r} is not a {BIN_DIGEST} digest ({BIN_DIGEST_HEX} hex digits)")

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, BIN_DIGEST: self.digest, "rows": self.rows}

    def matches(self, path: str | Path) -> bool:
        """Whether the file at `path` holds the bytes this entry's digest was taken of."""
        return digest_file(BIN_DIGEST, path) == self.digest

    def describes(self, data: bytes | memoryview) -> bool:
        """Whether `data` (the file's bytes, as read) are the bytes this entry's digest was taken of."""
        return digest_bytes(BIN_DIGEST, data) == self.digest

    @classmethod
    def from_fields(cls, entry: Fields, folder: Path) -> BinEntry:
        # A bin may be a link (a shard's view of the dataset is made of them): bins are only ever read through a
        # link; a writer replaces one by a rename, so the name alone is checked.
        name = entry.name("name", folder, follow_links=False)
        digest = entry.text(BIN_DIGEST)
        if not is_hex_digest(digest):
            found = f"{len(digest)}" if len(digest) != BIN_DIGEST_HEX else shown(digest)
            raise entry.refuse(BIN_DIGEST, f"expected {BIN_DIGEST_HEX} lower-case hex digits, found {found}")
        return cls(name=name, digest=digest, rows=entry.integer("rows", minimum=0))
