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
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, fields
from math import prod
from pathlib import Path

import numpy as np

from atc_wrap.ascend_files._protowire import Message, WireError
from atc_wrap.ascend_files.dump_names import DumpFileName, is_mapped_name, parse_dump_file_name, read_name_mapping
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


GE_BF16 = 27  # GE's DataType DT_BF16 (graph/types.h), as msaccucmp's DD.DT_BF16 reads a dump's data_type


def _bf16_to_float32(bits: np.ndarray) -> np.ndarray:
    """bf16 is the top half of a float32: the same value exactly, without ml_dtypes."""
    return (bits.astype("<u4") << 16).view("<f4")


def _storage_of(tensor: DumpTensor) -> tuple[np.dtype, Callable[[np.ndarray], np.ndarray] | None]:
    """How the tensor's bytes are stored, and what turns them into numbers (None: they are numbers already)."""
    if tensor.ge_dtype == GE_BF16:
        return np.dtype("<u2"), _bf16_to_float32
    try:
        return from_ge_enum(tensor.ge_dtype).np_dtype, None
    except DtypeError:
        raise NpuDumpError(f"{tensor.role} {tensor.index}: dtype {tensor.dtype} cannot be read as numbers "
                           "here") from None


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
        """The bytes as an array of the tensor's dtype and device shape; a bf16 tensor as float32, holding the same
        values (msaccucmp casts bf16 to float32 too). A dump may hold more bytes than its shape needs (an AIPP
        input, recorded at the image's original size: `padding`): the first ones are the tensor, as msaccucmp
        reads them; fewer is refused."""
        _, cast = _storage_of(self)
        stored = self.stored()
        return cast(stored) if cast is not None else stored

    def stored(self) -> np.ndarray:
        """The tensor's bytes in its device shape, as stored: a bf16 tensor as its 16-bit patterns."""
        storage, _ = _storage_of(self)
        expected = prod(self.shape) * storage.itemsize
        if expected > len(self.raw):
            raise NpuDumpError(f"{self.role} {self.index}: shape {self.shape} {self.dtype} takes {expected} bytes, "
                               f"the dump holds {len(self.raw)}")
        return np.frombuffer(self.raw, dtype=storage, count=prod(self.shape)).reshape(self.shape)

    @property
    def padding(self) -> int:
        """Bytes the dump holds past what the tensor's shape and dtype take (0 for most tensors; an AIPP Data
        input is sized as GE's `input_origin_size`, the original image's aligned size); 0 where it cannot be
        read as numbers."""
        try:
            storage, _ = _storage_of(self)
        except NpuDumpError:
            return 0
        return max(len(self.raw) - prod(self.shape) * storage.itemsize, 0)

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
    # FFTS+: the thread-slice files this dump's outputs were put together from (atc_wrap.ascend_files.dump_slices)
    slices: tuple[Path, ...] = ()

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


@dataclass(frozen=True)
class _Header:
    length: int
    dump: Message
    pending: list[_Pending]
    unknown: tuple[str, ...]
    inline: bool  # the tensors' data lie inside the header, none after it


def _read_header(head: memoryview, total: int, where: str | Path) -> _Header:
    """The header of a dump file of `total` bytes whose first bytes are `head` (the length and the header at
    least), checked against `total` before the data after it is read: a header length past the end, a header that
    is not a DumpData message, or tensor sizes that do not add up to the file's are refused."""
    if total < _LENGTH_BYTES:
        raise NpuDumpError(f"{where}: not an NPU dump file: expected an {_LENGTH_BYTES}-byte header length, the file "
                           f"has {total} bytes")
    length = int.from_bytes(head[:_LENGTH_BYTES], "little")
    if length > total - _LENGTH_BYTES:
        raise NpuDumpError(f"{where}: not an NPU dump file, or a truncated one: its first 8 bytes declare a "
                           f"{length}-byte header, {total - _LENGTH_BYTES} bytes follow")
    try:
        dump = Message(head[_LENGTH_BYTES:_LENGTH_BYTES + length], what="DumpData")
        pending = (_pending(dump, 4, "input", 4, 5) + _pending(dump, 3, "output", 5, 6)
                   + _pending(dump, 5, "buffer", 2, 3) + _pending(dump, 8, "workspace", 2, 3))
        unknown = _unknown(dump, _KNOWN["DumpData"], "DumpData")
        for item in pending:
            known = _KNOWN["space" if item.role == "workspace" else item.role]
            unknown += _unknown(item.message, known, f"{item.role}[{item.index}]")
    except WireError as err:
        raise NpuDumpError(f"{where}: not an NPU dump file: its {length}-byte header is not a DumpData message: "
                           f"{err}") from None
    trailing = total - _LENGTH_BYTES - length
    declared = sum(item.size for item in pending)
    inline = trailing == 0 and all(item.inline is not None and len(item.inline) == item.size
                                   for item in pending if item.size)
    if declared != trailing and not inline:
        raise NpuDumpError(f"{where}: truncated or corrupt NPU dump: its tensors declare {declared} bytes of data "
                           f"after the {length}-byte header, the file has {trailing}")
    return _Header(length, dump, pending, tuple(unknown), inline and declared != trailing)


def parse_npu_dump(data: bytes, where: str | Path, file_name: DumpFileName | None = None) -> NpuDump:
    """A dump file's content decoded; `where` names it in refusals."""
    view = memoryview(data)
    header = _read_header(view, len(data), where)
    dump, length, pending, unknown = header.dump, header.length, header.pending, list(header.unknown)
    try:
        attrs = tuple((a.string(1), a.string(2)) for a in dump.messages(7, "DumpData.attr"))
        op_name, version, dump_time = dump.string(6), dump.string(1), dump.uint(2)
        tensors: list[DumpTensor] = []
        if not header.inline:
            offset = _LENGTH_BYTES + length
            for item in pending:
                tensors.append(_tensor(item, bytes(view[offset:offset + item.size]), offset))
                offset += item.size
        else:
            tensors = [_tensor(item, bytes(item.inline) if item.inline is not None else b"", -1) for item in pending]
    except WireError as err:
        raise NpuDumpError(f"{where}: not an NPU dump file: its {length}-byte header is not a DumpData message: "
                           f"{err}") from None
    by_role = {role: tuple(t for t in tensors if t.role == role) for role in ("input", "output", "buffer", "workspace")}
    return NpuDump(path=Path(where), file_name=file_name, op_name=op_name, version=version, dump_time=dump_time,
                   inputs=by_role["input"], outputs=by_role["output"], buffers=by_role["buffer"],
                   workspaces=by_role["workspace"], attrs=attrs, unknown_fields=tuple(unknown))


def read_npu_dump(path: str | Path, file_name: DumpFileName | None = None) -> NpuDump:
    """The dump file at `path`; `file_name` is what its name says where that is not the file's own (a long name
    CANN wrote as a number, mapped back by mapping.csv). Refused with one line (NpuDumpError): too short, a header
    length past the file's end, a header that is not a DumpData message, tensor sizes that do not add up to the
    file's."""
    dump_path = Path(path)
    refuse_special(dump_path, "an NPU dump file")
    try:
        with open(dump_path, "rb") as handle:
            total = os.fstat(handle.fileno()).st_size
            head = handle.read(_LENGTH_BYTES)
            if len(head) == _LENGTH_BYTES:  # the header, checked against the file's size before its data is read
                head += handle.read(min(int.from_bytes(head, "little"), total))
            _read_header(memoryview(head), total, dump_path)
            data = head + handle.read()
    except PermissionError as err:
        refusal = permission_error(err)
        raise NpuDumpError(refusal.message, hint=refusal.hint) from err
    except OSError as err:
        raise NpuDumpError(f"{dump_path}: cannot read the dump file: {err.strerror or type(err).__name__}") from err
    return parse_npu_dump(data, dump_path, file_name or dump_file_name_of(dump_path))


def dump_file_name_of(path: Path) -> DumpFileName | None:
    """What a dump file's name says: its own name, or, for a number, the name its folder's mapping.csv gives."""
    if is_mapped_name(path.name):
        return parse_dump_file_name(read_name_mapping(path.parent).get(path.name, ""))
    return parse_dump_file_name(path.name)


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
    name: DumpFileName  # what the file's name says, or, for a number, the name mapping.csv gives it
    location: DumpLocation

    @property
    def mapped(self) -> bool:
        """Whether the file's own name is a number mapping.csv gave the real name of."""
        return is_mapped_name(self.path.name)


@dataclass(frozen=True)
class DumpFolder:
    """The dump files under a folder, ordered by place and timestamp; files whose names are not a dump's are
    listed apart (mapping.csv, converted .npy files, a number mapping.csv does not give the name of)."""

    root: Path
    entries: tuple[DumpEntry, ...]
    skipped: tuple[Path, ...]
    unmapped: tuple[Path, ...] = ()  # files named by a number with no row in their folder's mapping.csv


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
    unmapped: list[Path] = []
    above = top.resolve().parts
    for folder, subfolders, files in os.walk(top, followlinks=False):
        subfolders.sort()
        relative = tuple(Path(folder).relative_to(top).parts)
        mapping = read_name_mapping(Path(folder)) if any(is_mapped_name(file) for file in files) else {}
        for file in sorted(files):
            path = Path(folder) / file
            mapped = is_mapped_name(file)
            name = parse_dump_file_name(mapping.get(file, "") if mapped else file)
            if name is None:
                skipped.append(path)
                if mapped and file not in mapping:
                    unmapped.append(path)
            else:
                entries.append(DumpEntry(path, name, _location(above, relative)))
    entries.sort(key=lambda e: (e.location.time, e.location.device, e.location.model_name, e.location.model_id,
                                e.location.step, e.name.timestamp, e.name.op_name))
    return DumpFolder(root=top, entries=tuple(entries), skipped=tuple(skipped), unmapped=tuple(unmapped))
