"""An .npy header checked against the bytes behind it before numpy maps or loads the array: numpy trusts the header,
so a 128-byte file whose header says shape (10**12, 10**12) makes it raise OverflowError or try to allocate
petabytes (numpy's `_ArrayMemoryError` traceback). Refused here, by name, with the shape and both sizes."""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path
from typing import BinaryIO

import numpy as np

from binio.errors import InferError, excerpt

_MAX_HEADER = 10_000  # bytes of header numpy itself reads by default (its max_header_size)


def check_npy_header(path: Path, *, error: type[InferError] = InferError) -> tuple[tuple[int, ...], np.dtype]:
    """The shape and dtype an .npy file's header declares, refused (as `error`, naming the file) when the header
    does not parse or declares more bytes than the file holds. (An object dtype is numpy's to refuse, by
    allow_pickle=False.)"""
    with open(path, "rb") as handle:
        return check_npy_stream(handle, os.fstat(handle.fileno()).st_size, str(path), error=error)


def check_npy_stream(stream: BinaryIO, size: int, named: str, *,
                     error: type[InferError] = InferError) -> tuple[tuple[int, ...], np.dtype]:
    """`check_npy_header` for an .npy of `size` bytes open at its start (an .npz member)."""
    try:
        version = np.lib.format.read_magic(stream)
        if version == (1, 0):
            shape, _fortran, dtype = np.lib.format.read_array_header_1_0(stream, max_header_size=_MAX_HEADER)
        else:
            shape, _fortran, dtype = np.lib.format.read_array_header_2_0(stream, max_header_size=_MAX_HEADER)
    except (ValueError, OSError, EOFError, SyntaxError, TypeError, OverflowError) as exc:
        raise error(f"{named}: not an .npy file numpy reads ({excerpt(str(exc), 120)[1:-1]})") from None
    if any(not isinstance(d, int) or d < 0 for d in shape) or \
            math.prod(max(d, 1) for d in shape) * max(dtype.itemsize, 1) > sys.maxsize:
        raise error(f"{named}: its header declares shape {shape}, which no array has (numpy sizes them in 64 bits)")
    needed = math.prod(shape) * dtype.itemsize  # Python integers: no overflow, whatever the header says
    held = size - stream.tell()
    if needed > held:
        raise error(f"{named}: its header declares shape {tuple(shape)} {dtype} ({needed:,} bytes), the file holds "
                    f"{max(held, 0):,} bytes after it", hint="the file is cut short, or its header was edited")
    return tuple(shape), dtype
