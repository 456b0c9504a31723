"""Freed memory kept for reuse, so that a stage which allocates and frees the same large blocks over and over does
not page-fault each one in again.

With glibc's defaults a freed block of a few MiB or more goes back to the kernel (a heap trimmed above 2x the block,
or a mapping of its own unmapped), and the next one is faulted in again page by page and zeroed. Measured:
- compare allocates the same few batch-sized arrays (float64 copies, differences, KL terms) for every batch; two
  thirds of its time went to page faults (1.2 million for 256 MiB of outputs);
- freeze and convert copy every weight several times over (session variables, constant graphs, serialisations,
  tf2onnx's passes), each copy a block of up to the largest weight or the whole graph: on a model with 192 MiB of
  weights more than half of freeze's 13 s, and of convert's 90 s, was the kernel's;
- image decoding frees an image's worth of pixels per file.
Raising the two thresholds serves blocks up to `largest_block` from the heap and keeps up to `kept` of freed heap
for reuse; larger blocks are mapped and unmapped as before. What is kept was held at some moment, so the peak grows
only by what the heap cannot hand back in pieces (measured on freeze: +10%). Only glibc has `mallopt`; elsewhere
this does nothing.

The thresholds are the whole process's, so the library never sets them: a Python caller's own allocations would
change with them. The command line does, once, before it runs a command (infer/cli/app.py), and the worker processes
a stage starts keep what their parent keeps (`as_this_process`): compare's spawned workers, dump-bin's decoders.
"""

from __future__ import annotations

import ctypes
import functools
import sys
from collections.abc import Callable

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
INT_MAX = 2**31 - 1  # mallopt takes an int
ANY_SIZE = INT_MAX  # as `largest_block` and `kept`: every block a protobuf (2 GiB at most) can need, and all of it

_set = {_M_MMAP_THRESHOLD: 0, _M_TRIM_THRESHOLD: 0}


def keep_freed_memory(*, largest_block: int = 32 << 20, kept: int = 256 << 20) -> bool:
    """Serves blocks up to `largest_block` bytes from the heap and keeps up to `kept` bytes of it when freed; the
    thresholds only ever grow in a process (two stages in one process keep the larger). True where glibc took them."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt  # the process's own symbols, the C library's among them
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    taken = True
    for option, value in ((_M_MMAP_THRESHOLD, largest_block), (_M_TRIM_THRESHOLD, kept)):
        value = min(value, INT_MAX)
        if value > _set[option]:
            if not mallopt(option, value):  # an older glibc refuses an mmap threshold above 32 MiB
                taken = False
                continue
            _set[option] = value
    return taken


def as_this_process() -> Callable[[], bool]:
    """An initializer for the worker processes a stage starts: each keeps freed memory as this process does (as the
    command line asked; glibc's defaults where nothing asked, a Python caller's process say). Picklable, for a
    spawned worker, which inherits nothing of its parent's heap."""
    return functools.partial(keep_freed_memory, largest_block=_set[_M_MMAP_THRESHOLD], kept=_set[_M_TRIM_THRESHOLD])
