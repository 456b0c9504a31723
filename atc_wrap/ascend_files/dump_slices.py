"""One op's dump out of the files of one execution, put together as msaccucmp puts them (mindstudio-probe 26.2.0,
`dump_parse/dump.py` `DumpInfo`, `dump_parse/dump_utils.py` `sort_dump_file_list`, `dump_parse/ffts_parser.py`
`FFTSParser`, `dump_parse/dump_data_object.py`).

The files are grouped by the op name their file names give, with FFTS+ manual mode's slicing taken off
(`dump_names.sliced_op_name`: `conv_lxslice1` is a slice of `conv`; a name with `_lxslice` elsewhere is left out,
as msaccucmp leaves it out). An op's files are of one of three kinds:

- **normal**: not FFTS+ tasks. Several files of one op in one execution (an op run twice) are sorted by timestamp
  and the last one is the op's dump, as msaccucmp takes it.
- **auto** (FFTS+ task, task type 4, automatic slicing): each file holds one thread's slice of the op's outputs;
  sorted by thread id.
- **manual** (FFTS+, `_lxsliceN` in the name): one file per slice, sorted by N.

An FFTS+ op's slices are put back together from the JSON in the dump's first attr (`DumpData.attr[0].value`):
`outputCutList` gives, per output, the dims cut (those whose entry is not 1) and each output is concatenated along
the first of them; in automatic mode (`threadMode` set) each slice's shape is `output_tensor_slice[thread]`'s
`higher - lower` per dim, in manual mode the file's own shape. An output with no dim cut is the first slice's; an op
with no cut at all is its last file (by timestamp). `slice_instance_num` is the number of slices there should be:
fewer files are merged still, with a note, as msaccucmp does.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from math import prod
from typing import Any, Literal

import numpy as np

from atc_wrap.ascend_files.dump_names import sliced_op_name
from atc_wrap.ascend_files.errors import NpuDumpError
from atc_wrap.ascend_files.npu_dump import DumpEntry, DumpTensor, NpuDump
from binio.reading import parse_json

SliceMode = Literal["normal", "auto", "manual"]
_LX_SLICE = "_lxslice"
_LX_SLICES = re.compile(r"_lxslice[0-9]+")


@dataclass(frozen=True)
class OpFiles:
    """The files of one op in one execution, in the order msaccucmp puts them."""

    op_name: str  # as file names spell it (`/` and `.` as `_`), FFTS+ slicing taken off
    mode: SliceMode
    entries: tuple[DumpEntry, ...]


@dataclass(frozen=True)
class OpDump:
    """One op's dump: one file's, or its FFTS+ slices' put together; `note` says which where it is not plain."""

    files: OpFiles
    dump: NpuDump
    note: str = ""


def _mode(entries: Sequence[DumpEntry]) -> SliceMode:
    if not any(entry.name.ffts_plus for entry in entries):
        return "normal"
    return "manual" if any(_LX_SLICE in entry.name.op_name for entry in entries) else "auto"


def _slice_of(entry: DumpEntry) -> int:
    found = sliced_op_name(entry.name.op_name)
    return found.slice_index if found is not None and found.slice_index is not None else 0


def group_op_files(entries: Iterable[DumpEntry]) -> tuple[tuple[OpFiles, ...], tuple[DumpEntry, ...]]:
    """The entries of one execution grouped by op (in first-seen order), and those left out (`_lxslice` inside an
    op name)."""
    groups: dict[str, list[DumpEntry]] = {}
    left_out: list[DumpEntry] = []
    for entry in entries:
        name = sliced_op_name(entry.name.op_name)
        if name is None:
            left_out.append(entry)
        else:
            groups.setdefault(name.op_name, []).append(entry)
    found = []
    for op_name, members in groups.items():
        mode = _mode(members)
        ordered = sorted(members, key=lambda e: e.name.timestamp)
        if mode == "auto":
            ordered.sort(key=lambda e: e.name.thread_id or 0)
        elif mode == "manual":
            ordered.sort(key=_slice_of)
        found.append(OpFiles(op_name, mode, tuple(ordered)))
    return tuple(found), tuple(left_out)


def _slicing(dump: NpuDump) -> dict[str, Any]:
    """The FFTS+ slicing the dump's first attr records (msaccucmp reads `attr[0].value` as JSON)."""
    if not dump.attrs:
        return {}
    try:  # binio's reader: a device file's attr nested past its depth limit is no RecursionError
        found = parse_json(dump.attrs[0][1], named="the dump's first attr", what="FFTS+ slicing",
                           error=NpuDumpError)
    except NpuDumpError:
        return {}  # not JSON: no slicing recorded, as msaccucmp takes it
    return found if isinstance(found, dict) else {}


def _cut_axes(slicing: dict[str, Any]) -> list[list[int]]:
    cuts = slicing.get("outputCutList") or []
    return [[axis for axis, value in enumerate(output) if value != 1] for output in cuts if isinstance(output, list)]


def _slice_shapes(slicing: dict[str, Any], thread: int) -> list[tuple[int, ...]]:
    """Automatic mode: each output's shape in thread `thread`, from `output_tensor_slice` (higher - lower)."""
    per_thread = slicing.get("output_tensor_slice") or []
    if thread >= len(per_thread):
        raise NpuDumpError(f"output_tensor_slice has no thread {thread}")
    return [tuple(int(dim["higher"]) - int(dim["lower"]) for dim in output) for output in per_thread[thread]]


def _stored(tensor: DumpTensor, shape: Sequence[int] | None) -> np.ndarray:
    stored = tensor.stored()
    if shape is None:
        return stored
    if stored.size != prod(shape):
        raise NpuDumpError(f"output {tensor.index} holds {stored.size} values, its slice shape {tuple(shape)} "
                           f"takes {prod(shape)}")
    return stored.reshape(tuple(shape))


def _merged(files: OpFiles, dumps: Sequence[NpuDump]) -> OpDump:
    base = dumps[0]
    slicing = _slicing(base)
    cuts = _cut_axes(slicing)
    count = slicing.get("slice_instance_num")
    missing = f"; {len(dumps)} file(s) for {count} slices" if isinstance(count, int) and count != len(dumps) else ""
    paths = tuple(entry.path for entry in files.entries)
    if not cuts or all(not axes for axes in cuts):
        last = max(range(len(dumps)), key=lambda i: files.entries[i].name.timestamp)
        return OpDump(files, replace(dumps[last], slices=paths),
                      f"FFTS+ {files.mode} slicing with no dim cut: its last file ({paths[last].name}) is the "
                      f"op's dump{missing}")
    if any(len(dump.outputs) != len(base.outputs) for dump in dumps):
        raise NpuDumpError(f"its {len(dumps)} FFTS+ slice files hold different numbers of outputs")
    outputs = []
    for index, tensor in enumerate(base.outputs):
        if files.mode == "auto":
            parts = [_stored(dump.outputs[index], _slice_shapes(_slicing(dump), thread)[index])
                     for thread, dump in enumerate(dumps)]
        else:
            parts = [_stored(dump.outputs[index], None) for dump in dumps]
        axes = cuts[index] if index < len(cuts) else []
        whole = np.concatenate(parts, axis=axes[0]) if axes else parts[0]
        raw = np.ascontiguousarray(whole).tobytes()
        outputs.append(replace(tensor, shape=tuple(int(d) for d in whole.shape), size=len(raw), data_offset=-1,
                               raw=raw))
    op_name = _LX_SLICES.sub("", base.op_name)  # msaccucmp's process_op_name: every `_lxsliceN` removed
    shapes = ", ".join(str(list(t.shape)) for t in outputs)
    return OpDump(files, replace(base, op_name=op_name, outputs=tuple(outputs), slices=paths),
                  f"FFTS+ {files.mode} slicing: {len(dumps)} thread slices put together into {shapes}{missing}")


def op_dump(files: OpFiles, read: Callable[[DumpEntry], NpuDump]) -> OpDump:
    """The op's dump from its files (`read` reads one). Refused (NpuDumpError, naming the file) where a file
    cannot be read or its slices do not fit together."""
    if files.mode == "normal" or len(files.entries) == 1:
        entry = files.entries[-1]
        dump = read(entry)
        note = (f"{len(files.entries)} dumps of the op in one execution: the last ({entry.path.name}) is compared, "
                "as msaccucmp takes it") if len(files.entries) > 1 else ""
        return OpDump(files, dump, note)
    dumps = [read(entry) for entry in files.entries]
    try:
        return _merged(files, dumps)
    except (NpuDumpError, KeyError, TypeError, ValueError) as exc:  # the slicing JSON is the device's to write
        raise NpuDumpError(f"{files.entries[0].path}: its {len(dumps)} FFTS+ slices cannot be put together: "
                           f"{exc}") from None
