"""Reading and writing raw ``.bin`` tensors: little-endian, C order, no header, the size always checked."""

from __future__ import annotations

import math
import mmap as mmap_module
import os
import stat
from pathlib import Path

import numpy as np

from binio.atomic import atomic_file
from binio.digest import BIN_DIGEST, digest_bytes, digest_file
from binio.dtypes import DTYPE_NAMES, dtype
from binio.errors import BinFileError
from binio.spec import TensorSpec, format_shape


def sha256_file(path: Path) -> str:
    """The sha256 of a model or a document: what model.json and run.json record (bins: `binio.digest`)."""
    return digest_file("sha256", path)


def _size_hint(got: int, count: int, expected_dtype: str) -> str:
    """Names the dtype the file would have if its size were right for the shape: the usual tofile() mistake."""
    if count == 0 or got % count:
        return ""
    itemsize = got // count
    guesses = [n for n in DTYPE_NAMES if dtype(n).itemsize == itemsize and n != expected_dtype]
    preferred = [g for g in guesses if dtype(g).is_float] or guesses
    return f" (is it {preferred[0]}?)" if preferred else ""


def check_bin_size(path: str | Path, spec: TensorSpec) -> None:
    """Refuses a file whose byte count is not dtype x shape, naming both."""
    try:
        got = os.stat(path).st_size
    except FileNotFoundError:
        raise BinFileError(f"{path}: no such file") from None
    _check_size(path, spec, got)


def _check_size(path: str | Path, spec: TensorSpec, got: int) -> None:
    shape = spec.static_shape()
    expected = math.prod(shape) * spec.dt.itemsize
    if got != expected:
        hint = _size_hint(got, math.prod(shape), spec.dtype)
        raise BinFileError(
            f"{path}: expected {expected} bytes for shape {format_shape(shape)} {spec.dtype}, got {got}{hint}"
        )


# From this size a file asked for memory-mapped is mapped; a smaller one is read, which costs less than a map (a
# map is several system calls, and numpy's memmap resolves the path): at batch 1 a comparison reads thousands of
# files of a few bytes each, and mapping them was a third of its time per batch.
MAPPED_FROM = 1 << 20


def read_bin(path: Path | str, spec: TensorSpec, *, mmap: bool = False) -> np.ndarray:
    """The tensor in `path`, shaped and typed per `spec`, after checking its size; the file is opened once. With
    `mmap`, a file of MAPPED_FROM bytes or more is memory-mapped (read-only), a smaller one read."""
    return BinReader(spec, mmap=mmap).read(path)


class BinReader:
    """`read_bin` for many files of one spec: the shape, dtype and size worked out once, not per file (a
    comparison at batch 1 reads two files a batch, tens of thousands of them)."""

    def __init__(self, spec: TensorSpec, *, mmap: bool = False) -> None:
        self.spec = spec
        self.shape = spec.static_shape()
        self.dtype = spec.dt.np_dtype
        self.nbytes = math.prod(self.shape) * spec.dt.itemsize
        self.mmap = mmap

    def read(self, path: Path | str) -> np.ndarray:
        try:
            # Not blocking: a FIFO under a bin's name is refused by its size below, not waited on.
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        except FileNotFoundError:
            raise BinFileError(f"{path}: no such file") from None
        with os.fdopen(fd, "rb", buffering=0) as handle:
            status = os.fstat(fd)
            if status.st_size != self.nbytes:
                _check_size(Path(path), self.spec, status.st_size)
            if self.mmap and status.st_size >= MAPPED_FROM and stat.S_ISREG(status.st_mode):
                mapped = mmap_module.mmap(fd, 0, access=mmap_module.ACCESS_READ)
                return np.frombuffer(mapped, dtype=self.dtype).reshape(self.shape)
            array = np.empty(self.shape, dtype=self.dtype)
            view = array.reshape(-1).view(np.uint8).data if array.size else memoryview(bytearray())
            done = 0
            while done < view.nbytes:
                count = handle.readinto(view[done:])
                if not count:  # the file shrank after its size was checked
                    raise BinFileError(f"{path}: ended after {done} of {view.nbytes} bytes (changed while read)")
                done += count
            return array


def write_bin(path: Path, array: np.ndarray, dtype_name: str | None = None) -> str:
    """Writes `array` as raw little-endian bytes, atomically, and returns their digest, as a manifest's file entry
    records it (`binio.digest.BIN_DIGEST`).

    With `dtype_name`, the array must already have that dtype: casting is the caller's decision, made where
    the loss can be counted (`binio.cast`), never a silent ``tofile()`` of whatever dtype came along.
    """
    if dtype_name is not None and np.dtype(array.dtype) != np.dtype(dtype(dtype_name).numpy):
        raise BinFileError(f"{path}: array is {array.dtype}, expected {dtype(dtype_name).name}")
    return digest_bytes(BIN_DIGEST, write_raw(path, array))


def write_raw(path: str | os.PathLike[str], array: np.ndarray) -> memoryview:
    """Writes `array` as raw little-endian bytes, atomically, unhashed; returns the bytes written (a view, no copy
    where the array is already little-endian and C-contiguous), for a caller that wants their digest."""
    data = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<"))
    payload = data.reshape(-1).view(np.uint8).data if data.size else memoryview(b"")
    with atomic_file(path, payload.nbytes) as handle:
        handle.write(payload)
    return payload
