"""Memory a shape would take, checked against the memory this process can have before anything is allocated: a
batch of 10^9 is refused in one line, not met with a MemoryError traceback (or the machine's OOM killer) later."""

from __future__ import annotations

import os
from pathlib import Path

from binio.errors import InferError

_CGROUP_LIMITS = (Path("/sys/fs/cgroup/memory.max"), Path("/sys/fs/cgroup/memory/memory.limit_in_bytes"))


class MemoryLimitError(InferError):
    """A shape whose bytes exceed the memory available."""


def format_bytes(count: int) -> str:
    value = float(count)
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if value < 1024 or unit == "PiB":
            return f"{count} bytes" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{count} bytes"


def _meminfo_available() -> int | None:
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _cgroup_limit() -> int | None:
    for path in _CGROUP_LIMITS:
        try:
            text = path.read_text().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < 1 << 60:  # "max", or the huge number meaning no limit
            return int(text)
    return None


def available_memory() -> int | None:
    """The bytes this process could allocate now: the machine's available memory, or its container's limit where
    that is lower; None where neither can be read."""
    known = [n for n in (_meminfo_available(), _cgroup_limit()) if n is not None]
    return min(known) if known else None


def check_fits(needed: int, what: str, *, hint: str | None = None) -> None:
    """Refuses `needed` bytes for `what` when they exceed the memory available."""
    available = available_memory()
    if available is not None and needed > available:
        raise MemoryLimitError(f"{what}: needs {format_bytes(needed)}, {format_bytes(available)} of memory available",
                               hint=hint)
