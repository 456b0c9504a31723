"""Reading and writing raw ``.bin`` tensors: little-endian, C order, no header, the size always checked."""

from __future__ import annotations

import math
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


def check_bin_size(path: Path, spec: TensorSpec) -> None:
    """Refuses a file whose byte count is not dtype x shape, naming both."""
    shape = spec.static_shape()
    expected = math.prod(shape) * spec.dt.itemsize
    try:
        got = Path(path).stat().st_size
    except FileNotFoundError:
        raise BinFileError(f"{path}: no such file") from None
    if got != expected:
        hint = _size_hint(got, math.prod(shape), spec.dtype)
        raise BinFileError(
            f"{path}: expected {expected} bytes for shape {format_shape(shape)} {spec.dtype}, got {got}{hint}"
        )


def read_bin(path: Path, spec: TensorSpec, *, mmap: bool = False) -> np.ndarray:
    """The tensor in `path`, shaped and typed per `spec`, after checking its size."""
    check_bin_size(path, spec)
    shape = spec.static_shape()
    if mmap:
        return np.memmap(path, dtype=spec.dt.np_dtype, mode="r", shape=shape)
    return np.fromfile(path, dtype=spec.dt.np_dtype).reshape(shape)


def write_bin(path: Path, array: np.ndarray, dtype_name: str | None = None) -> str:
    """Writes `array` as raw little-endian bytes, atomically, and returns their digest, as a manifest's file entry
    records it (`binio.digest.BIN_DIGEST`).

    With `dtype_name`, the array must already have that dtype: casting is the caller's decision, made where
    the loss can be counted (`binio.cast`), never a silent ``tofile()`` of whatever dtype came along.
    """
    if dtype_name is not None and np.dtype(array.dtype) != np.dtype(dtype(dtype_name).numpy):
        raise BinFileError(f"{path}: array is {array.dtype}, expected {dtype(dtype_name).name}")
    return digest_bytes(BIN_DIGEST, write_raw(path, array))


def write_raw(path: Path, array: np.ndarray) -> memoryview:
    """Writes `array` as raw little-endian bytes, atomically, unhashed; returns the bytes written (a view, no copy
    where the array is already little-endian and C-contiguous), for a caller that wants their digest."""
    data = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<"))
    payload = data.reshape(-1).view(np.uint8).data if data.size else memoryview(b"")
    with atomic_file(Path(path), payload.nbytes) as handle:
        handle.write(payload)
    return payload
