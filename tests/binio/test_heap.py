"""keep_freed_memory: a large block freed and allocated again reuses its pages instead of faulting in new ones."""

from __future__ import annotations

import subprocess
import sys

import pytest

# A fresh interpreter each time: the thresholds are process-wide and only ever grow.
_FAULTS = """
import ctypes, resource, sys
from binio.heap import keep_freed_memory
if sys.argv[1] == "keep":
    assert keep_freed_memory(largest_block=1 << 30, kept=1 << 30)
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = (ctypes.c_size_t,)
libc.free.argtypes = (ctypes.c_void_p,)
def touched_block():  # 100 MiB written through, freed: glibc maps blocks this large on their own by default
    block = libc.malloc(100 << 20)
    ctypes.memset(block, 1, 100 << 20)
    libc.free(block)
touched_block()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
touched_block()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults_of_the_second_block(mode: str) -> int:
    done = subprocess.run([sys.executable, "-c", _FAULTS, mode], capture_output=True, text=True, check=True)
    return int(done.stdout)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_a_block_freed_and_taken_again_is_not_faulted_in_again() -> None:
    pages = (100 << 20) // 4096  # small pages: plain malloc asks for no huge ones
    assert _faults_of_the_second_block("default") > pages // 2  # mapped afresh, every page faulted in
    assert _faults_of_the_second_block("keep") < pages // 10  # the heap's pages, reused


def test_the_thresholds_only_grow() -> None:
    import binio.heap as heap

    before = dict(heap._set)  # what other stages in this process may have asked for already
    if not heap.keep_freed_memory(largest_block=64 << 20, kept=512 << 20):
        pytest.skip("no glibc mallopt here")
    asked = {heap._M_MMAP_THRESHOLD: 64 << 20, heap._M_TRIM_THRESHOLD: 512 << 20}
    grown = {option: max(before[option], asked[option]) for option in asked}
    assert heap._set == grown
    heap.keep_freed_memory()  # the smaller defaults: nothing lowered
    assert heap._set == grown
