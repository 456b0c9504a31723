"""Freed memory kept for reuse, so that streaming a dataset batch by batch does not page-fault every batch in again.

compare allocates the same few batch-sized arrays (float64 copies, differences, KL terms) for every batch, and
frees them again. With glibc's defaults, a freed block of a few MiB goes back to the kernel (a heap trimmed above 2x the
block, or an mmap unmapped), and the next batch's array is faulted in again page by page and zeroed: measured on
compare, two thirds of its time went to page faults (1.2 million for 256 MiB of outputs). Raising the two
thresholds keeps up to `TRIM_THRESHOLD` of freed heap for reuse, and serves blocks up to `MMAP_THRESHOLD` from
that heap; larger blocks are mapped and unmapped as before. Peak memory is unchanged (what is kept is what the
process held at its peak). Only glibc has `mallopt`; elsewhere this does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 << 20  # glibc's largest on 64-bit; a block above it is its own mapping
TRIM_THRESHOLD = 256 << 20

_done = False


def keep_freed_memory() -> bool:
    """Sets the thresholds once per process; True where glibc took them."""
    global _done
    if _done:
        return True
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    _done = bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    return _done
