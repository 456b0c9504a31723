"""The one output layout every backend leaves: ``OUT/<timestamp>/<stem>_output_<i>.bin`` plus ``run.json``.

It is msame's own layout, so a run folder from real msame, from ais_bench (renamed) and from the stand-in read
the same way. msame names its folder by a timestamp in one of two forms, ``%Y%m%d_%H%M%S`` and the newer
unpadded ``YYYYMD_H_M_S_usec``; readers take the newest folder.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

from binio.errors import InferError

RUN_JSON = "run.json"
_PADDED = re.compile(r"^(\d{8})_(\d{6})$")
_UNPADDED = re.compile(r"^(\d{4})(\d{1,2})(\d{1,2})_(\d{1,2})_(\d{1,2})_(\d{1,2})_(\d{1,6})$")
_OUTPUT = re.compile(r"^(?P<stem>.+)_output_(?P<index>\d+)\.bin$")


def output_file_name(stem: str, index: int) -> str:
    """``000003`` and output 1 -> ``000003_output_1.bin``."""
    return f"{stem}_output_{index}.bin"


def parse_output_file_name(name: str) -> tuple[str, int] | None:
    """``000003_output_1.bin`` -> (``000003``, 1); None for any other name."""
    match = _OUTPUT.match(name)
    return (match["stem"], int(match["index"])) if match else None


def timestamp_folder_name(when: datetime) -> str:
    """The folder name this toolkit writes: msame's padded form, microseconds appended to stay unique."""
    return when.strftime("%Y%m%d_%H%M%S_%f")


def parse_timestamp_folder(name: str) -> datetime | None:
    """Either of msame's forms, or ours (padded + microseconds); None when `name` is no timestamp."""
    padded = _PADDED.match(name)
    if padded:
        return datetime.strptime(name, "%Y%m%d_%H%M%S")
    ours = re.match(r"^(\d{8}_\d{6})_(\d{6})$", name)
    if ours:
        return datetime.strptime(name, "%Y%m%d_%H%M%S_%f")
    unpadded = _UNPADDED.match(name)
    if unpadded:
        # The unpadded date is ambiguous only in theory (2024111 = Jan 11 or Nov 1); msame writes month then day
        # without padding, and we take the reading that is a valid date, preferring a two-digit month.
        year, month, day, hour, minute, second, usec = unpadded.groups()
        digits = month + day
        for split in (2, 1):
            m, d = digits[:split], digits[split:]
            try:
                return datetime(int(year), int(m), int(d), int(hour), int(minute), int(second), int(usec))
            except ValueError:
                continue
    return None


# ais_bench's own run folder under its --output (Ascend/tools ais-bench_workload, msit ait/components/benchmark):
# `<output>/<%Y_%m_%d-%H_%M_%S>/`, beside `<output>/<that name>_summary.json`.
AIS_BENCH_FOLDER_FORMAT = "%Y_%m_%d-%H_%M_%S"


def parse_ais_bench_folder(name: str) -> datetime | None:
    """ais_bench's folder name (``2024_01_01-12_00_00``) as a time; None for any other name."""
    try:
        return datetime.strptime(name, AIS_BENCH_FOLDER_FORMAT)
    except ValueError:
        return None


def newest_run_folder(out_root: Path) -> Path:
    """The newest timestamp folder under `out_root`, whichever form its name takes."""
    if not out_root.is_dir():
        raise InferError(f"{out_root}: no such output folder")
    stamped = [(when, p) for p in out_root.iterdir() if p.is_dir() and (when := parse_timestamp_folder(p.name))]
    if not stamped:
        raise InferError(f"{out_root}: no timestamp folder inside (expected e.g. 20240101_120000)")
    return max(stamped)[1]
