"""What this machine allows a count the user gives (threads, workers, loops, dims): every count is bounded, and a
refusal says the bound and where it comes from. Standard library only: the options modules check with it."""

from __future__ import annotations

import math
import os

from binio.errors import InferError

# TensorFlow and ONNX Runtime hold a dim in an int64, ATC and msame in an int32 in places: a dim, a batch or a gear
# value past this is no shape any of them runs.
MAX_DIM = 2**31 - 1
PROTOBUF_LIMIT = 2**31 - 1  # bytes: protobuf parses and writes no larger message (a pb, an om's model partition)


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity, which a container or taskset narrows), at least 1."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def check_count(value: float, option: str, *, most: float, why: str, least: int = 1) -> None:
    """Refuses `value` of `option` outside `least`..`most`, naming the bound and `why` it is one."""
    shown = f"{value:g}" if isinstance(value, float) else str(value)
    if value < least:
        raise InferError(f"{option} {shown}: expected {least} or more")
    if not value <= most:  # NaN too
        raise InferError(f"{option} {shown}: expected at most {most:g} ({why})")


def check_seconds(value: float, option: str) -> None:
    """Refuses a time limit that is not a number of seconds more than 0: 0, negative, NaN, or infinite (which is no
    limit, and a hung tool would then hold the run for ever)."""
    if not (value > 0 and math.isfinite(value)):
        raise InferError(f"{option} {value:g}: expected seconds, a finite number more than 0")


WORKERS_PER_CPU = 4  # more processes or threads than this per CPU only wait for each other


def most_workers() -> tuple[int, str]:
    """The most worker processes or threads a command starts here, and why: `WORKERS_PER_CPU` per usable CPU (at
    least 8), and a quarter of the process limit (RLIMIT_NPROC, which counts threads too) where one is set: past
    it they are not even started, and a pool waiting for them hangs."""
    cpus = usable_cpus()
    most, why = max(8, WORKERS_PER_CPU * cpus), f"{WORKERS_PER_CPU} per usable CPU, {cpus} here"
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_NPROC)[0]
    except (ImportError, OSError, ValueError, AttributeError):
        soft = -1
    if soft > 0 and soft // 4 < most:
        most, why = max(1, soft // 4), f"a quarter of this user's process limit, {soft}"
    return most, why


def check_workers(value: int, option: str) -> None:
    """Refuses more worker processes or threads than `most_workers` allows, naming the bound."""
    most, why = most_workers()
    check_count(value, option, most=most, why=why)
