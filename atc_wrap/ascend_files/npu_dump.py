"""An NPU dump file (what msame or ais_bench write with dump on), read without CANN: `read_npu_dump(path)`.

A dump file is an 8-byte little-endian length L, a `toolkit.dumpdata.DumpData` protobuf of L bytes, then the raw
bytes of the inputs, the outputs, the buffers and the workspaces, in that order, each as long as its `size`
(the order and the check that the sizes add up to the file's are those of Ascend/tools' msaicerr
`ms_interface/dump_data_parser.py`). The fields followed (dump_task.proto in graphengine, extended by the newer
definition msaicerr ships, `ms_interface/dump_data_pb2.py`):

- DumpData{version = 1, dump_time = 2, output = 3, input = 4, buffer = 5, op_name = 6, attr = 7, space = 8}
- OpOutput{data_type = 1, format = 2, shape = 3, original_op = 4, data = 5, size = 6, original_shape = 7,
  sub_format = 8, address = 9, dim_range = 10, offset = 11}
- OpInput{data_type = 1, format = 2, shape = 3, data = 4, size = 5, original_shape = 6, sub_format = 7,
  address = 8, offset = 9}
- OpBuffer{buffer_type = 1, data = 2, size = 3}; Workspace{type = 1, data = 2, size = 3}; OpAttr{name, value}
- OriginalOp{name = 1, output_index = 2, data_type = 3, format = 4}; Shape{repeated uint64 dim = 1}

Fields beyond these are skipped, not fatal, and listed in `NpuDump.unknown_fields`. Data types use GE's DataType
numbers (binio.dtypes); formats the OutputFormat numbers of the newer definition, where 30 is NCDHW (the first
dump_task.proto had FORMAT_RESERVED there, which no tensor carries).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields
from math import prod
from pathlib import Path

import numpy as np

from atc_wrap.ascend_files._protowire import Message, WireError
from atc_wrap.ascend_files.errors import LayoutError, NpuDumpError
from atc_wrap.ascend_files.npu_layouts import to_origin_layout
from binio.dtypes import from_ge_enum, ge_dtype_name
from binio.errors import DtypeError, permission_error
from binio.regular import refuse_special

_LENGTH_BYTES = 8

DUMP_FORMATS: dict[int, str] = dict(enumerate((
    "NCHW", "NHWC", "ND", "NC1HWC0", "FRACTAL_Z", "NC1C0HWPAD", "NHWC1C0", "FSR_NCHW", "FRACTAL_DECONV",
    "C1HWNC0", "FRACTAL_DECONV_TRANSPOSE", "FRACTAL_DECONV_SP_STRIDE_TRANS", "NC1HWC0_C04", "FRACTAL_Z_C04", "CHWN",
    "FRACTAL_DECONV_SP_STRIDE8_TRANS", "HWCN", "NC1KHKWHWC0", "BN_WEIGHT", "FILTER_HWCK", "HASHTABLE_LOOKUP_LOOKUPS",
    "HASHTABLE_LOOKUP_KEYS", "HASHTABLE_LOOKUP_VALUE", "HASHTABLE_LOOKUP_OUTPUT", "HASHTABLE_LOOKUP_HITS",
    "C1HWNCoC0", "MD", "NDHWC", "FRACTAL_ZZ", "FRACTAL_NZ", "NCDHW", "DHWCN", "NDC1HWC0", "FRACTAL_Z_3D", "CN",
    "NC", "DHWNC", "FRACTAL_Z_3D_TRANSPOSE", "FRACTAL_ZN_LSTM", "FRACTAL_Z_G", "RESERVED", "ALL", "NULL",
    "ND_RNN_BIAS", "FRACTAL_ZN_RNN", "YUV", "YUV_A")))
"""OutputFormat, by number (the names less their FORMAT_ prefix, as an om's layout strings spell them)."""

_KNOWN = {"DumpData": frozenset(range(1, 9)), "output": frozenset(range(1, 12)), "input": frozenset(range(1, 10)),
          "buffer": frozenset({1, 2, 3}), "space": frozenset({1, 2, 3})}


def dump_format_name(value: int) -> str:
    return DUMP_FORMATS.get(value, f"FORMAT_{value}")


@dataclass(frozen=True)
class DumpTensor:
    """One input, output, buffer or workspace of a dump, with its bytes."""

    role: str  # input, output, buffer, workspace
    index: int
    dtype: str  # our name (float16) where binio knows it, else GE's; "" for buffers and workspaces
    format: str  # NC1HWC0, FRACTAL_NZ, ... ("" for buffers and workspaces)
    shape: tuple[int, ...]
    original_shape: tuple[int, ...] | None  # newer dumps: the framework's shape
    sub_format: int
    size: int
    data_offset: int  # where its bytes start in the file (-1: they were inside the protobuf)
    original_name: str  # outputs: the framework node this is the output of (OriginalOp.name)
    original_output_index: int | None
    original_dtype: str
    original_format: str
    ge_dtype: int  # the GE DataType number the dump records
    raw: bytes = field(repr=False)

    def to_json(self) -> dict[str, object]:
        """The tensor's description, without its bytes."""
        return {item.name: getattr(self, item.name) for item in fields(self) if item.name != "raw"}

    def array(self) -> np.ndarray:
        """The bytes as an array of the tensor's dtype and device shape."""
        try:
            dtype = from_ge_enum(self.ge_dtype)
        except DtypeError:
            raise NpuDumpError(f"{self.role} {self.index}: dtype {self.dtype} cannot be read as numbers here") from None
        expected = prod(self.shape) * dtype.itemsize
        if expected != len(self.raw):
            raise NpuDumpError(f"{self.role} {self.index}: shape {self.shape} {self.dtype} takes {expected} bytes, "
                               f"the dump holds {len(self.raw)}")
        return np.frombuffer(self.raw, dtype=dtype.np_dtype).reshape(self.shape)

    def origin_array(self, origin_format: str | None = None,
                     origin_shape: Sequence[int] | None = None) -> np.ndarray:
        """The tensor in the framework's layout: the given origin format and shape (the om's, for this op), else
        the dump's own (original_op.format, original_shape) where it has them."""
        fmt = origin_format if origin_format is not None else self.original_format
        shape = tuple(origin_shape) if origin_shape is not None else self.original_shape
        if not fmt or shape is None:
            raise LayoutError(f"{self.role} {self.index} ({self.format} {self.shape}): its origin format and shape "
                              f"are not in the dump: expected them from the om")
        return to_origin_layout(self.array(), self.format, self.shape, fmt, shape)


@dataclass(frozen=True)
class DumpFileName:
    """What a dump file's name says: `{op_type}.{op_name}.{task_id}.{stream_id}.{timestamp}` (older CANN, the
    stream id sometimes absent), or `{op_type}.{op_name}.{stream_id}.{task_id}.{timestamp}.{task_type}.
    {context_id}.{thread_id}.{device_id}` (newer, the stream id again optional). `/` and `.` in op names are `_`."""

    op_type: str
    op_name: str
    task_id: int
    stream_id: int | None
    timestamp: int
    extra: tuple[int, ...]  # task_type, context_id, thread_id, device_id in the newer form


_NAME_PART = re.compile(r"[A-Za-z0-9_\-]+")


def parse_dump_file_name(name: str) -> DumpFileName | None:
    """The parts of a dump file's name; None for a name of another form."""
    parts = name.split(".")
    stamp_at = next((i for i, part in enumerate(parts) if i >= 2 and len(part) == 16 and part.isdigit()), None)
    if stamp_at is None or not all(_NAME_PART.fullmatch(p) for p in parts[:2]):
        return None
    ids, extra = parts[2:stamp_at], parts[stamp_at + 1:]
    if not 1 <= len(ids) <= 2 or not all(p.isdigit() for p in ids + extra) or len(extra) not in (0, 4):
        return None
    numbers = [int(p) for p in ids]
    if len(numbers) == 1:
        task_id, stream_id = numbers[0], None
    elif extra:
        stream_id, task_id = numbers
    else:
        task_id, stream_id = numbers
    return DumpFileName(parts[0], parts[1], task_id, stream_id, int(parts[stamp_at]), tuple(int(p) for p in extra))


@dataclass(frozen=True)
class NpuDump:
    """One dump file: the op, its tensors, and what in it this reader did not know."""

    path: Path
    file_name: DumpFileName | None
    op_name: str
    version: str
    dump_time: int
    inputs: tuple[DumpTensor, ...]
    outputs: tuple[DumpTensor, ...]
    buffers: tuple[DumpTensor, ...]
    workspaces: tuple[DumpTensor, ...]
    attrs: tuple[tuple[str, str], ...]
    unknown_fields: tuple[str, ...]  # "DumpData.12", "output[0].14": skipped fields a newer CANN may have added

    def to_json(self) -> dict[str, object]:
        """What `infer bin-info DUMPFILE --json` shows: the op, each tensor's description (no bytes), what was
        skipped."""
        return {"path": str(self.path), "file_name": asdict(self.file_name) if self.file_name else None,
                "op_name": self.op_name, "version": self.version, "dump_time": self.dump_time,
                **{role: [t.to_json() for t in tensors] for role, tensors in (
                    ("inputs", self.inputs), ("outputs", self.outputs), ("buffers", self.buffers),
                    ("workspaces", self.workspaces))},
                "attrs": dict(self.attrs), "unknown_fields": list(self.unknown_fields)}


def _shape(message: Message | None) -> tuple[int, ...]:
    return message.ints(1, signed=False) if message is not None else ()


def _unknown(message: Message, known: frozenset[int], where: str) -> list[str]:
    return [f"{where}.{number}" for number in message.numbers() if number not in known]


@dataclass
class _Pending:
    role: str
    index: int
    message: Message
    size: int
    inline: memoryview | None


def _pending(dump: Message, number: int, role: str, data_field: int, size_field: int) -> list[_Pending]:
    found = []
    for index, message in enumerate(dump.messages(number, f"DumpData.{role}")):
        inline = message.raw(data_field)
        found.append(_Pending(role, index, message, message.uint(size_field), inline if inline else None))
    return found


def _tensor(item: _Pending, raw: bytes, offset: int) -> DumpTensor:
    message, role = item.message, item.role
    if role in ("buffer", "workspace"):
        return DumpTensor(role=role, index=item.index, dtype="", format="", shape=(), original_shape=None,
                          sub_format=0, size=item.size, data_offset=offset, original_name="",
                          original_output_index=None, original_dtype="", original_format="", ge_dtype=0, raw=raw)
    is_output = role == "output"
    original = message.message(4, f"output[{item.index}].original_op") if is_output else None
    shape_field, sub_format_field = (7, 8) if is_output else (6, 7)
    original_shape = message.message(shape_field, f"{role}[{item.index}].original_shape")
    return DumpTensor(
        role=role, index=item.index, dtype=ge_dtype_name(message.uint(1)), format=dump_format_name(message.uint(2)),
        shape=_shape(message.message(3, f"{role}[{item.index}].shape")),
        original_shape=_shape(original_shape) if original_shape is not None else None,
        sub_format=message.int64(sub_format_field), size=item.size, data_offset=offset,
        original_name=original.string(1) if original is not None else "",
        original_output_index=original.uint(2) if original is not None and original.string(1) else None,
        # proto3 leaves zeros out: an original op without a format field is NCHW (0), as protobuf reads it
        original_dtype=ge_dtype_name(original.uint(3)) if original is not None and original.string(1) else "",
        original_format=dump_format_name(original.uint(4)) if original is not None and original.string(1) else "",
        ge_dtype=message.uint(1), raw=raw)


def parse_npu_dump(data: bytes, where: str | Path, file_name: DumpFileName | None = None) -> NpuDump:
    """A dump file's content decoded; `where` names it in refusals."""
    if len(data) < _LENGTH_BYTES:
        raise NpuDumpError(f"{where}: not an NPU dump file: expected an {_LENGTH_BYTES}-byte header length, the file "
                           f"has {len(data)} bytes")
    length = int.from_bytes(data[:_LENGTH_BYTES], "little")
    if length > len(data) - _LENGTH_BYTES:
        raise NpuDumpError(f"{where}: not an NPU dump file, or a truncated one: its first 8 bytes declare a "
                           f"{length}-byte header, {len(data) - _LENGTH_BYTES} bytes follow")
    view = memoryview(data)
    try:
        dump = Message(view[_LENGTH_BYTES:_LENGTH_BYTES + length], what="DumpData")
        pending = (_pending(dump, 4, "input", 4, 5) + _pending(dump, 3, "output", 5, 6)
                   + _pending(dump, 5, "buffer", 2, 3) + _pending(dump, 8, "workspace", 2, 3))
        unknown = _unknown(dump, _KNOWN["DumpData"], "DumpData")
        for item in pending:
            known = _KNOWN["space" if item.role == "workspace" else item.role]
            unknown += _unknown(item.message, known, f"{item.role}[{item.index}]")
        attrs = tuple((a.string(1), a.string(2)) for a in dump.messages(7, "DumpData.attr"))
        op_name, version, dump_time = dump.string(6), dump.string(1), dump.uint(2)
        trailing = len(data) - _LENGTH_BYTES - length
        declared = sum(item.size for item in pending)
        tensors: list[DumpTensor] = []
        if declared == trailing:
            offset = _LENGTH_BYTES + length
            for item in pending:
                tensors.append(_tensor(item, bytes(view[offset:offset + item.size]), offset))
                offset += item.size
        elif trailing == 0 and all(item.inline is not None and len(item.inline) == item.size
                                   for item in pending if item.size):
            tensors = [_tensor(item, bytes(item.inline) if item.inline is not None else b"", -1) for item in pending]
        else:
            raise NpuDumpError(f"{where}: truncated or corrupt NPU dump: its tensors declare {declared} bytes of data "
                               f"after the {length}-byte header, the file has {trailing}")
    except WireError as err:
        raise NpuDumpError(f"{where}: not an NPU dump file: its {length}-byte header is not a DumpData message: "
                           f"{err}") from None
    by_role = {role: tuple(t for t in tensors if t.role == role) for role in ("input", "output", "buffer", "workspace")}
    return NpuDump(path=Path(where), file_name=file_name, op_name=op_name, version=version, dump_time=dump_time,
                   inputs=by_role["input"], outputs=by_role["output"], buffers=by_role["buffer"],
                   workspaces=by_role["workspace"], attrs=attrs, unknown_fields=tuple(unknown))


def read_npu_dump(path: str | Path) -> NpuDump:
    """The dump file at `path`. Refused with one line (NpuDumpError): too short, a header length past the file's
    end, a header that is not a DumpData message, tensor sizes that do not add up to the file's."""
    dump_path = Path(path)
    refuse_special(dump_path, "an NPU dump file")
    try:
        data = dump_path.read_bytes()
    except PermissionError as err:
        refusal = permission_error(err)
        raise NpuDumpError(refusal.message, hint=refusal.hint) from err
    except OSError as err:
        raise NpuDumpError(f"{dump_path}: cannot read the dump file: {err.strerror or type(err).__name__}") from err
    return parse_npu_dump(data, dump_path, parse_dump_file_name(dump_path.name))


@dataclass(frozen=True)
class DumpLocation:
    """Where a dump file lies under `{dump_path}/{time}/{device}/{model_name}/{model_id}/{step}/` (a single-op dump
    stops at the device); "" for the levels the folder given does not show."""

    time: str
    device: str
    model_name: str
    model_id: str
    step: str


@dataclass(frozen=True)
class DumpEntry:
    path: Path
    name: DumpFileName
    location: DumpLocation


@dataclass(frozen=True)
class DumpFolder:
    """The dump files under a folder, ordered by place and timestamp; files whose names are not a dump's are
    listed apart (msaccucmp's mapping.csv, converted .npy files)."""

    root: Path
    entries: tuple[DumpEntry, ...]
    skipped: tuple[Path, ...]


_LEVELS = ("time", "device", "model_name", "model_id", "step")
_DUMP_TIME = re.compile(r"\d{14}")


def _location(above: tuple[str, ...], folders: tuple[str, ...]) -> DumpLocation:
    """The levels of a file's folder: from the time folder (14 digits: YYYYMMDDhhmmss) down, looked for in the
    whole path (`above` the walked folder, then `folders` below it); without one, the folders below the walked one
    fill the innermost levels."""
    path = above + folders
    anchor = next((i for i in range(len(path) - 1, -1, -1)
                   if _DUMP_TIME.fullmatch(path[i]) and len(path) - i <= len(_LEVELS)), None)
    if anchor is not None:
        values = dict(zip(_LEVELS, path[anchor:], strict=False))
    else:
        tail = folders[-len(_LEVELS):]
        values = dict(zip(_LEVELS[len(_LEVELS) - len(tail):], tail, strict=True))
    return DumpLocation(**{level: values.get(level, "") for level in _LEVELS})


def walk_dump_folder(root: str | Path) -> DumpFolder:
    """Every dump file under `root` (the acl.json dump_path or any folder below it), without reading them."""
    top = Path(root)
    if not top.is_dir():
        raise NpuDumpError(f"{top}: expected a dump folder, found {'a file' if top.exists() else 'nothing'}")
    entries: list[DumpEntry] = []
    skipped: list[Path] = []
    above = top.resolve().parts
    for folder, subfolders, files in os.walk(top, followlinks=False):
        subfolders.sort()
        relative = tuple(Path(folder).relative_to(top).parts)
        for file in sorted(files):
            path = Path(folder) / file
            name = parse_dump_file_name(file)
            if name is None:
                skipped.append(path)
            else:
                entries.append(DumpEntry(path, name, _location(above, relative)))
    entries.sort(key=lambda e: (e.location.time, e.location.device, e.location.model_name, e.location.model_id,
                                e.location.step, e.name.timestamp, e.name.op_name))
    return DumpFolder(root=top, entries=tuple(entries), skipped=tuple(skipped))
