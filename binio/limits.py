"""What this machine allows a count the user gives (threads, workers, loops, dims): every count is bounded, and a
refusal says the bound and where it comes from. Standard library only: the options modules check with it."""

from __future__ import annotations

import math
import os

from binio.errors import InferError

# TensorFlow and ONNX Runtime hold a dim in an int64, ATC and msame in an int32 in places: a dim, a batch or a gear
# value past this is no shape any of them runs.
MAX_DIM = 2**31 - 1


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity, which a container or taskset narrows), at least 1."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def check_count(value: float, option: str, *, most: float, why: str, least: int = 1) -> None:
    """Refuses `value` of `option` outside `least`..`most`, naming the bound and `why` it is one."""
    if not least <= value <= most:
        shown = f"{value:g}" if isinstance(value, float) else str(value)
        raise InferError(f"{option} {shown}: expected {least} to {most:g} ({why})")


def check_seconds(value: float, option: str) -> None:
    """Refuses a time limit that is not a number of seconds more than 0: 0, negative, NaN, or infinite (which is no
    limit, and a hung tool would then hold the run for ever)."""
    if not (value > 0 and math.isfinite(value)):
        raise InferError(f"{option} {value:g}: expected seconds, a finite number more than 0")


def check_workers(value: int, option: str) -> None:
    """Refuses more worker processes or threads than this machine's CPUs (more only wait for each other, and under a
    process limit they are not even started)."""
    check_count(value, option, most=usable_cpus(), why="this machine's usable CPUs")
