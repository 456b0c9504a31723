"""keep_freed_memory: a large block freed and allocated again reuses its pages instead of faulting in new ones; the
command line asks for it, for its process and the workers it starts, and the library never does."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from infer.contract import ModelContract

# What a process does after its setup: the page faults of a block freed and allocated again (MiB, the first argument
# after the setup's). In a fresh interpreter each time: the thresholds are process-wide and only ever grow.
_SECOND_BLOCK = """
import ctypes, resource
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = (ctypes.c_size_t,)
libc.free.argtypes = (ctypes.c_void_p,)
size = int(sys.argv[1]) << 20
def touched_block():  # written through, freed
    block = libc.malloc(size)
    ctypes.memset(block, 1, size)
    libc.free(block)
touched_block()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
touched_block()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""
_FAULTS = """
import sys
from binio.heap import keep_freed_memory
if sys.argv[2] == "keep":
    assert keep_freed_memory(largest_block=1 << 30, kept=1 << 30)
""" + _SECOND_BLOCK


def _faults_of_the_second_block(mode: str) -> int:
    # 100 MiB: glibc maps a block this large on its own by default
    done = subprocess.run([sys.executable, "-c", _FAULTS, "100", mode], capture_output=True, text=True, check=True)
    return int(done.stdout)


@pytest.mark.slow
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


_AFTER = """
import sys
mode, model, images, out = sys.argv[2:]
if mode == "cli":
    from infer.cli.app import main
    try:
        main(["dump-bin", "-m", model, "-o", out, images])
    except SystemExit as exit:
        assert exit.code == 0, exit.code
else:
    import infer
    infer.dump_bins(model, infer.DumpOptions(output=out, sources=(("", images),)))
""" + _SECOND_BLOCK


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_the_command_line_keeps_freed_memory_and_a_python_callers_process_is_left_alone(
        frozen_small_cnn: ModelContract, tmp_path: Path) -> None:
    """The same image dump (whose decoding had the library set the thresholds), run by `infer dump-bin` and by a
    Python caller: only the command line's process keeps what it frees afterwards."""
    from PIL import Image

    (tmp_path / "images").mkdir()
    for index in range(2):
        Image.fromarray(np.full((8, 8, 3), index * 40, np.uint8)).save(tmp_path / "images" / f"{index}.png")
    # 48 MiB: above glibc's largest dynamic mmap threshold (32 MiB), below the 64 MiB the decoding once had kept
    faults = {mode: int(subprocess.run([sys.executable, "-c", _AFTER, "48", mode, str(frozen_small_cnn.path),
                                        str(tmp_path / "images"), str(tmp_path / mode)],
                                       capture_output=True, text=True, check=True, timeout=300).stdout.split()[-1])
              for mode in ("cli", "library")}
    pages = (48 << 20) // 4096
    assert faults["cli"] < pages // 10, faults  # the heap's pages, reused
    assert faults["library"] > pages // 2, faults  # glibc's defaults: mapped afresh, every page faulted in


def _thresholds_here() -> dict[int, int]:
    import binio.heap as heap

    return dict(heap._set)


@pytest.mark.slow
def test_a_spawned_worker_keeps_freed_memory_as_its_parent_does() -> None:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    import binio.heap as heap

    if not heap.keep_freed_memory(largest_block=64 << 20, kept=512 << 20):
        pytest.skip("no glibc mallopt here")
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"),
                             initializer=heap.as_this_process()) as pool:
        assert pool.submit(_thresholds_here).result(timeout=120) == heap._set
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        assert pool.submit(_thresholds_here).result(timeout=120) != heap._set  # glibc's defaults, told nothing
