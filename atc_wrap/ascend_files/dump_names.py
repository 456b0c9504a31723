"""What an NPU dump file's name says, as CANN writes it and msaccucmp reads it: `parse_dump_file_name`, the
`mapping.csv` of long names (`read_name_mapping`), and the op name a dump is of once FFTS+ slicing is taken off it
(`sliced_op_name`).

The forms are those msaccucmp's `OFFLINE_DUMP_PATTERN` accepts (mindstudio-probe 26.2.0, `cmp_utils/reg_manager.py`):
``{op_type}.{op_name}.{task_id}[.{stream_id}].{timestamp}[.{task_type}.{context_id}.{thread_id}][.{device_id}]``
(the newer names, with the three task fields, give the stream first: ``{stream_id}.{task_id}``), each id a run of
digits, the timestamp of any length (CANN writes 16 digits of microseconds, msaccucmp takes 1 to
255). `/` and `.` in op names are `_`. Stricter than msaccucmp, which matches the pattern at the name's start only
(so `Add.add.1.2.txt` passes there), every field after the op name must be digits. Where the fields can be cut two
ways (three numbers: task, stream and timestamp, or task, timestamp and a device id; six numbers: a stream and three
trailing fields, or four trailing fields) the timestamp is the longer field (a time in microseconds is longer than
any id), and on a tie the cut msaccucmp's own reading makes (`dump_parse/dump.py`, `_check_task_type`: the fourth
field from the end is the task type).

A name longer than 255 characters is written as a number instead, with a row ``number,real name`` in the folder's
`mapping.csv` (msprobe's dump documentation; msaccucmp's `dump_parse/mapping.py`, which reads it with the csv
module and skips rows that are not two cells).
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from pathlib import Path

MAPPING_FILE = "mapping.csv"
# msaccucmp's task types (cmp_utils/constant/const_manager.py, TASK_TYPE_MAP): AICORE 0, AICPU 1, DEBUG 2, ...,
# FFTSPLUS 4, whose ops may be cut into thread slices.
FFTS_PLUS_TASK = 4
_LX_SLICE_AT_END = re.compile(r"_lxslice(\d+)$")  # msaccucmp: the field `_lxsliceN` at the end of an op name
_SGT_GRAPH = re.compile(r"sgt_graph_\d+")
_NAME_PART = re.compile(r"[A-Za-z0-9_\-]+")
_MAPPING_LIMIT = 100 * 1024 * 1024  # msaccucmp's own bound on mapping.csv (check_file_size, ONE_HUNDRED_MB)


@dataclass(frozen=True)
class DumpFileName:
    """What a dump file's name says. `extra` holds what follows the timestamp: (task_type, context_id, thread_id)
    and the device id where the name has it, or the device id alone, or nothing (the older names)."""

    op_type: str
    op_name: str
    task_id: int
    stream_id: int | None
    timestamp: int
    extra: tuple[int, ...]

    @property
    def task_type(self) -> int | None:
        return self.extra[0] if len(self.extra) >= 3 else None

    @property
    def thread_id(self) -> int | None:
        return self.extra[2] if len(self.extra) >= 3 else None

    @property
    def ffts_plus(self) -> bool:
        """An FFTS+ task's dump (910B-class chips), which may be one thread slice of the op's output."""
        return self.task_type == FFTS_PLUS_TASK


# (ids before the timestamp, fields after it) for each count of numeric fields, in the order ties are resolved
_CUTS: dict[int, tuple[tuple[int, int], ...]] = {2: ((1, 0),), 3: ((2, 0), (1, 1)), 4: ((2, 1),), 5: ((1, 3),),
                                                  6: ((1, 4), (2, 3)), 7: ((2, 4),)}


def parse_dump_file_name(name: str) -> DumpFileName | None:
    """The parts of a dump file's name; None for a name of another form (mapping.csv, a converted .npy)."""
    parts = name.split(".")
    numbers = parts[2:]
    if len(parts) < 4 or not all(_NAME_PART.fullmatch(part) for part in parts[:2]) or \
            not all(part.isdigit() for part in numbers):
        return None
    cuts = _CUTS.get(len(numbers))
    if cuts is None:
        return None
    ids, after = max(cuts, key=lambda cut: len(numbers[cut[0]].lstrip("0") or "0"))  # the first of equals wins
    values = [int(part) for part in numbers]
    if ids == 1:
        task_id, stream_id = values[0], None
    elif after >= 3:  # the newer names put the stream first (CANN's and MindStudio's documentation)
        stream_id, task_id = values[0], values[1]
    else:
        task_id, stream_id = values[0], values[1]
    return DumpFileName(parts[0], parts[1], task_id, stream_id, values[ids], tuple(values[ids + 1:]))


@dataclass(frozen=True)
class SlicedName:
    """An op name as an FFTS+ manual-mode dump spells it, and the op it is a slice of."""

    op_name: str  # the op's own name: `_lxsliceN` at the end and the `..._sgt_graph_N_` prefix taken off
    slice_index: int | None  # N of `_lxsliceN`, where the name had it


def sliced_op_name(name: str) -> SlicedName | None:
    """The op a dump file's op name is of, as msaccucmp's `handle_op_name` makes it (`dump_parse/dump.py`): a final
    `_lxsliceN` removed, then everything up to the last `sgt_graph_N_`. None for a name with `_lxslice` elsewhere,
    which msaccucmp leaves out of the comparison."""
    slice_index = None
    found = _LX_SLICE_AT_END.search(name)
    if found is not None:
        slice_index = int(found.group(1))
        name = name[:found.start()]
    if "_lxslice" in name:
        return None
    sgt = list(_SGT_GRAPH.finditer(name))
    if sgt and sgt[-1].end() < len(name):
        name = name[sgt[-1].end() + 1:]
    return SlicedName(name, slice_index)


def is_mapped_name(file_name: str) -> bool:
    """A file CANN named by a number because its real name passed 255 characters (or its `.npy` conversion)."""
    stem, dot, suffix = file_name.partition(".")
    return stem.isdigit() and (not dot or suffix == "npy")


def read_name_mapping(folder: Path) -> dict[str, str]:
    """The `mapping.csv` of `folder`: numeric file name -> the real name; empty where there is none. Rows that
    are not two cells are skipped, as msaccucmp skips them; a file that cannot be read maps nothing."""
    path = folder / MAPPING_FILE
    try:
        if not path.is_file() or path.stat().st_size > _MAPPING_LIMIT:
            return {}
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return {}
    try:
        rows = list(csv.reader(io.StringIO(text)))
    except csv.Error:
        return {}
    return {row[0].strip(): row[1].strip() for row in rows if len(row) == 2}
