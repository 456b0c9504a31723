"""The digests: XXH3-128, which dataset.json records per bin, and sha256, which model.json and run.json record.

A bin's digest guards against a file changed by accident after dump-bin (a re-dump of another dataset, a copy cut
short, a disk): not against a forger. For that, a 128-bit non-cryptographic hash is as good as sha256 (rsync
chooses XXH3-128 for the same job) and about 20 times faster: sha256 runs at 1.5 GB/s a core, so on two cores it
was a third of a dump's CPU. Models keep sha256 (model.json, run.json): one file,
read once per command, and the digest people compare with `sha256sum`. `xxh128sum` (xxHash's command-line tool)
prints the same hex as a bin's ``xxh128``.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol

import xxhash

from binio.regular import refuse_special

BIN_DIGEST = "xxh128"  # what dataset.json records per bin, under this key
BIN_DIGEST_HEX = 32  # its hex digits
DIGESTS = ("xxh128", "sha256")
_CHUNK = 1 << 22
_SMALLEST_CHUNK = 1 << 16


class _Hasher(Protocol):
    def update(self, data: bytes | memoryview, /) -> None: ...

    def hexdigest(self) -> str: ...


def _new(algorithm: str) -> _Hasher:
    if algorithm == "xxh128":
        return xxhash.xxh3_128()
    if algorithm == "sha256":
        return hashlib.sha256()
    raise ValueError(f"unknown digest {algorithm!r}: expected one of {', '.join(DIGESTS)}")


def digest_bytes(algorithm: str, data: bytes | memoryview) -> str:
    """The hex digest of `data` (a buffer: an array's ``.data.cast("B")`` is hashed without a copy)."""
    hasher = _new(algorithm)
    hasher.update(data)
    return hasher.hexdigest()


def digest_pieces(algorithm: str, pieces: Iterable[bytes]) -> str:
    """The hex digest of the pieces' concatenation, never held whole (a listing of 50,000 files)."""
    hasher = _new(algorithm)
    for piece in pieces:
        hasher.update(piece)
    return hasher.hexdigest()


def digest_file(algorithm: str, path: str | Path) -> str:
    """The hex digest of a regular file's bytes (a FIFO or a device is refused, not read)."""
    refuse_special(path)
    hasher = _new(algorithm)
    with open(path, "rb", buffering=0) as handle:
        # No bigger than the file needs (plus the byte that shows its end): a bytearray is zeroed, so a 4 MiB
        # buffer for each of dump-bin's re-dumped bins, or for a small model, cost more than reading the file. At
        # least 64 KiB: a size the file system does not know (0 for a growing file) is not read byte by byte.
        size = os.fstat(handle.fileno()).st_size + 1
        buffer = bytearray(min(_CHUNK, max(size, _SMALLEST_CHUNK)))
        view = memoryview(buffer)
        while got := handle.readinto(buffer):
            hasher.update(view[:got])
    return hasher.hexdigest()
