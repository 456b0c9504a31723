"""An independent writer of what Huawei's tools write: om files (both header versions, both partition tables) and
NPU dump files, for the readers' tests.

The messages are built with google.protobuf from descriptors declared here field by field (the numbers of the
public ge_ir.proto and dump_task.proto, and the newer DumpData msaicerr ships), serialised by protobuf itself;
the header is packed from the public ModelFileHeader struct. Nothing here uses atc_wrap's readers.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_F = descriptor_pb2.FieldDescriptorProto
_OPTIONAL, _REPEATED = _F.LABEL_OPTIONAL, _F.LABEL_REPEATED
_TYPES = {"string": _F.TYPE_STRING, "bytes": _F.TYPE_BYTES, "int64": _F.TYPE_INT64, "uint64": _F.TYPE_UINT64,
          "uint32": _F.TYPE_UINT32, "int32": _F.TYPE_INT32, "float": _F.TYPE_FLOAT, "bool": _F.TYPE_BOOL,
          "enum": _F.TYPE_INT32}


def _message(parent: Any, name: str, fields: Iterable[tuple[str, int, str, bool]],
             maps: Iterable[tuple[str, int, str]] = ()) -> Any:
    """A message in `parent` (a file or a message): (name, number, type, repeated) per field, where type is a
    scalar's name or a message's full name (".pkg.Msg"); `maps` adds map<string, Msg> fields."""
    message = parent.message_type.add() if hasattr(parent, "message_type") else parent.nested_type.add()
    message.name = name
    for field_name, number, kind, repeated in fields:
        added = message.field.add(name=field_name, number=number, label=_REPEATED if repeated else _OPTIONAL)
        if kind.startswith("."):
            added.type, added.type_name = _F.TYPE_MESSAGE, kind
        else:
            added.type = _TYPES[kind]
    for field_name, number, value_type in maps:
        entry = message.nested_type.add(name=f"{field_name.title()}Entry")
        entry.options.map_entry = True
        entry.field.add(name="key", number=1, label=_OPTIONAL, type=_F.TYPE_STRING)
        entry.field.add(name="value", number=2, label=_OPTIONAL, type=_F.TYPE_MESSAGE, type_name=value_type)
        message.field.add(name=field_name, number=number, label=_REPEATED, type=_F.TYPE_MESSAGE,
                          type_name=f".{_package_of(parent)}.{name}.{entry.name}")
    return message


def _package_of(parent: Any) -> str:
    return str(parent.package)


def _ge_file() -> descriptor_pb2.FileDescriptorProto:
    fd = descriptor_pb2.FileDescriptorProto(name="test_ge_ir.proto", package="ge.proto", syntax="proto3")
    attr = ".ge.proto.AttrDef"
    attr_def = _message(fd, "AttrDef", [
        ("s", 2, "bytes", False), ("i", 3, "int64", False), ("f", 4, "float", False), ("b", 5, "bool", False),
        ("bt", 7, "bytes", False), ("list", 1, ".ge.proto.AttrDef.ListValue", False),
        ("func", 10, ".ge.proto.NamedAttrs", False), ("td", 11, ".ge.proto.TensorDescriptor", False),
        ("g", 13, ".ge.proto.GraphDef", False), ("list_list_int", 14, ".ge.proto.AttrDef.ListListInt", False),
        ("dt", 15, "int64", False)])
    attr_def.oneof_decl.add(name="value")
    for value_field in attr_def.field:
        value_field.oneof_index = 0
    _message(attr_def, "ListValue", [
        ("s", 2, "bytes", True), ("i", 3, "int64", True), ("f", 4, "float", True), ("b", 5, "bool", True),
        ("bt", 7, "bytes", True), ("td", 8, ".ge.proto.TensorDescriptor", True),
        ("na", 11, ".ge.proto.NamedAttrs", True), ("dt", 12, "int64", True), ("val_type", 20, "enum", False)])
    list_list = _message(attr_def, "ListListInt", [("list_list_i", 1, ".ge.proto.AttrDef.ListListInt.ListInt", True)])
    _message(list_list, "ListInt", [("list_i", 1, "int64", True)])
    _message(fd, "NamedAttrs", [("name", 1, "string", False)], maps=[("attr", 2, attr)])
    _message(fd, "ShapeDef", [("dim", 1, "int64", True)])
    _message(fd, "TensorDescriptor", [("name", 1, "string", False), ("dtype", 2, "enum", False),
                                      ("shape", 3, ".ge.proto.ShapeDef", False), ("layout", 4, "string", False),
                                      ("size", 10, "int64", False)], maps=[("attr", 5, attr)])
    _message(fd, "OpDef", [("name", 1, "string", False), ("type", 2, "string", False), ("input", 5, "string", True),
                           ("id", 21, "int64", False), ("src_name", 24, "string", True),
                           ("src_index", 25, "int64", True), ("input_desc", 33, ".ge.proto.TensorDescriptor", True),
                           ("output_desc", 34, ".ge.proto.TensorDescriptor", True)], maps=[("attr", 10, attr)])
    _message(fd, "GraphDef", [("name", 1, "string", False), ("input", 4, "string", True),
                              ("output", 5, "string", True), ("op", 6, ".ge.proto.OpDef", True)],
             maps=[("attr", 11, attr)])
    _message(fd, "ModelDef", [("name", 1, "string", False), ("version", 2, "uint32", False),
                              ("custom_version", 3, "string", False), ("graph", 7, ".ge.proto.GraphDef", True)],
             maps=[("attr", 11, attr)])
    return fd


def _dump_file() -> descriptor_pb2.FileDescriptorProto:
    fd = descriptor_pb2.FileDescriptorProto(name="test_dump_data.proto", package="toolkit.dumpdata", syntax="proto3")
    _message(fd, "OriginalOp", [("name", 1, "string", False), ("output_index", 2, "uint32", False),
                                ("data_type", 3, "enum", False), ("format", 4, "enum", False)])
    _message(fd, "Shape", [("dim", 1, "uint64", True)])
    _message(fd, "OpOutput", [("data_type", 1, "enum", False), ("format", 2, "enum", False),
                              ("shape", 3, ".toolkit.dumpdata.Shape", False),
                              ("original_op", 4, ".toolkit.dumpdata.OriginalOp", False), ("data", 5, "bytes", False),
                              ("size", 6, "uint64", False), ("original_shape", 7, ".toolkit.dumpdata.Shape", False),
                              ("sub_format", 8, "int32", False), ("address", 9, "uint64", False),
                              ("offset", 11, "uint64", False)])
    _message(fd, "OpInput", [("data_type", 1, "enum", False), ("format", 2, "enum", False),
                             ("shape", 3, ".toolkit.dumpdata.Shape", False), ("data", 4, "bytes", False),
                             ("size", 5, "uint64", False), ("original_shape", 6, ".toolkit.dumpdata.Shape", False),
                             ("sub_format", 7, "int32", False), ("address", 8, "uint64", False),
                             ("offset", 9, "uint64", False)])
    _message(fd, "OpBuffer", [("buffer_type", 1, "enum", False), ("data", 2, "bytes", False),
                              ("size", 3, "uint64", False)])
    _message(fd, "OpAttr", [("name", 1, "string", False), ("value", 2, "string", False)])
    _message(fd, "Workspace", [("type", 1, "enum", False), ("data", 2, "bytes", False), ("size", 3, "uint64", False)])
    # field 99: what a newer CANN might add; the reader must skip it
    _message(fd, "DumpData", [("version", 1, "string", False), ("dump_time", 2, "uint64", False),
                              ("output", 3, ".toolkit.dumpdata.OpOutput", True),
                              ("input", 4, ".toolkit.dumpdata.OpInput", True),
                              ("buffer", 5, ".toolkit.dumpdata.OpBuffer", True), ("op_name", 6, "string", False),
                              ("attr", 7, ".toolkit.dumpdata.OpAttr", True),
                              ("space", 8, ".toolkit.dumpdata.Workspace", True),
                              ("future", 99, "string", False)])
    return fd


_POOL = descriptor_pool.DescriptorPool()
_POOL.Add(_ge_file())
_POOL.Add(_dump_file())


def dump_descriptor_set() -> bytes:
    """The DumpData definition above as a serialized FileDescriptorSet, for a process that decodes the files."""
    found = descriptor_pb2.FileDescriptorSet()
    found.file.add().CopyFrom(_dump_file())
    return bytes(found.SerializeToString())


def message_class(full_name: str) -> Any:
    return message_factory.GetMessageClass(_POOL.FindMessageTypeByName(full_name))


ModelDef = message_class("ge.proto.ModelDef")
OpDef = message_class("ge.proto.OpDef")
TensorDescriptor = message_class("ge.proto.TensorDescriptor")
AttrDef = message_class("ge.proto.AttrDef")
NamedAttrs = message_class("ge.proto.NamedAttrs")
DumpData = message_class("toolkit.dumpdata.DumpData")

# GE's DataType and the dump's OutputFormat numbers, as the public protos declare them.
GE_FLOAT, GE_FLOAT16, GE_INT8, GE_UINT8, GE_INT32 = 1, 2, 3, 4, 7
DUMP_FORMAT = {"NCHW": 0, "NHWC": 1, "ND": 2, "NC1HWC0": 3, "FRACTAL_Z": 4, "HWCN": 16, "FRACTAL_NZ": 29}
_GE_DTYPE_OF = {np.dtype("float32"): GE_FLOAT, np.dtype("float16"): GE_FLOAT16, np.dtype("int8"): GE_INT8,
                np.dtype("uint8"): GE_UINT8, np.dtype("int32"): GE_INT32}


def set_attr(target: Any, key: str, value: Any) -> None:
    """One entry of an `attr` map: a str, int, float, bool, bytes, list of str/int/float, or a NamedAttrs dict."""
    attr = target[key]
    if isinstance(value, bool):
        attr.b = value
    elif isinstance(value, int):
        attr.i = value
    elif isinstance(value, float):
        attr.f = value
    elif isinstance(value, str):
        attr.s = value.encode()
    elif isinstance(value, bytes):
        attr.bt = value
    elif isinstance(value, dict):
        attr.func.name = value.get("__name__", "")
        for inner_key, inner in value.items():
            if inner_key != "__name__":
                set_attr(attr.func.attr, inner_key, inner)
    elif isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        attr.list.s.extend(v.encode() for v in value)
        attr.list.val_type = 1
    elif isinstance(value, (list, tuple)) and value and all(isinstance(v, float) for v in value):
        attr.list.f.extend(value)
        attr.list.val_type = 3
    elif isinstance(value, (list, tuple)):
        attr.list.i.extend(value)
        attr.list.val_type = 2
    else:
        raise TypeError(f"no AttrDef for {value!r}")


@dataclass
class Desc:
    """A tensor descriptor to write: device dtype/shape/layout, origin format/shape, the fusion map's attrs."""

    dtype: int
    shape: Sequence[int]
    layout: str
    origin_format: str = ""
    origin_shape: Sequence[int] | None = None
    size: int = 0
    origin_name: str = ""
    origin_output_index: int | None = None

    def fill(self, desc: Any) -> None:
        desc.dtype = self.dtype
        desc.shape.dim.extend(self.shape)
        desc.layout = self.layout
        desc.size = self.size
        if self.origin_format:
            set_attr(desc.attr, "origin_format", self.origin_format)
        if self.origin_shape is not None:
            set_attr(desc.attr, "origin_shape", list(self.origin_shape))
        if self.origin_name:
            set_attr(desc.attr, "_datadump_origin_name", self.origin_name)
            set_attr(desc.attr, "_datadump_origin_format", self.origin_format)
        if self.origin_output_index is not None:
            set_attr(desc.attr, "_datadump_origin_output_index", self.origin_output_index)


@dataclass
class Op:
    name: str
    type: str
    inputs: Sequence[str] = ()
    input_descs: Sequence[Desc] = ()
    output_descs: Sequence[Desc] = ()
    attrs: dict[str, Any] = field(default_factory=dict)
    src_names: Sequence[str] = ()
    src_indexes: Sequence[int] = ()


def model_def(ops: Sequence[Op], attrs: dict[str, Any], name: str = "model") -> bytes:
    model = ModelDef(name=name, version=2)
    for key, value in attrs.items():
        set_attr(model.attr, key, value)
    graph = model.graph.add(name=f"{name}_0")
    for index, op in enumerate(ops):
        added = graph.op.add(name=op.name, type=op.type, id=index)
        added.input.extend(op.inputs)
        added.src_name.extend(op.src_names)
        added.src_index.extend(op.src_indexes)
        for desc in op.input_descs:
            desc.fill(added.input_desc.add())
        for desc in op.output_descs:
            desc.fill(added.output_desc.add())
        for key, value in op.attrs.items():
            set_attr(added.attr, key, value)
    return bytes(model.SerializeToString())


def om_bytes(partitions: Sequence[tuple[int, bytes]], *, version: int = 0x20000000, name: str = "model",
             encrypted: bool = False, wide: bool = False, models: Sequence[Sequence[tuple[int, bytes]]] = (),
             platform_version: str = "1.11.z.0", om_ir_version: int = 2) -> bytes:
    """An om: the 256-byte ModelFileHeader, then per model a partition table and its partitions. `wide` writes
    the 64-bit table (and sets model_length, which is how GE knows); `models` gives several models (model_num)."""
    all_models = [list(p) for p in models] if models else [list(partitions)]
    body = bytearray()
    for model in all_models:
        if wide:
            body += struct.pack("<I4x", len(model))
        else:
            body += struct.pack("<I", len(model))
        offset = 0
        for kind, data in model:
            body += struct.pack("<I4xQQ", kind, offset, len(data)) if wide else struct.pack("<III", kind, offset,
                                                                                              len(data))
            offset += len(data)
        for _, data in model:
            body += data
    header = bytearray(256)
    struct.pack_into("<III", header, 0, 0x444F4D49, 256, version)
    struct.pack_into("<I", header, 76, len(body) if not wide else 0)
    header[80] = 1 if encrypted else 0
    header[84:84 + len(name)] = name.encode()
    struct.pack_into("<I", header, 152, om_ir_version)
    platform = platform_version.encode()
    if version == 0x10000000:
        header[156:156 + len(platform)] = platform
        header[176] = 1
    else:
        struct.pack_into("<I", header, 156, len(all_models))
        header[160:160 + len(platform)] = platform
        header[180] = 1
        if wide:
            struct.pack_into("<Q", header, 184, len(body))
    return bytes(header + body)


@dataclass
class DumpTensorSpec:
    """A tensor to dump: its device bytes, dtype, format and shape, and (outputs) its framework origin."""

    data: np.ndarray
    format: str
    shape: Sequence[int] | None = None
    original_name: str = ""
    original_index: int = 0
    original_format: str | None = None
    original_shape: Sequence[int] | None = None
    ge_dtype: int | None = None  # the data_type written, where it is not `data`'s (27: bf16, its bits in uint16)
    padding: bytes = b""  # bytes past the tensor's own, counted in its size (GE's input_origin_size of AIPP)


def dump_bytes(op_name: str, inputs: Sequence[DumpTensorSpec], outputs: Sequence[DumpTensorSpec], *,
               buffers: Sequence[bytes] = (), inline: bool = False, future_field: str = "",
               attrs: Sequence[tuple[str, str]] = ()) -> bytes:
    """A dump file: 8-byte little-endian header length, the DumpData, then inputs, outputs, buffers' bytes (or,
    with `inline`, the bytes inside the message's data fields and nothing after it)."""
    dump = DumpData(version="2.0", dump_time=1_700_000_000_000_000, op_name=op_name)
    if future_field:
        dump.future = future_field
    for key, value in attrs:
        dump.attr.add(name=key, value=value)
    trailing = bytearray()
    for spec, target in [(s, dump.input.add()) for s in inputs] + [(s, dump.output.add()) for s in outputs]:
        raw = np.ascontiguousarray(spec.data).tobytes() + spec.padding
        target.data_type = spec.ge_dtype if spec.ge_dtype is not None else _GE_DTYPE_OF[spec.data.dtype]
        target.format = DUMP_FORMAT[spec.format]
        target.shape.dim.extend(spec.shape if spec.shape is not None else spec.data.shape)
        target.size = len(raw)
        if spec.original_shape is not None:
            target.original_shape.dim.extend(spec.original_shape)
        if hasattr(target, "original_op") and spec.original_name:
            target.original_op.name = spec.original_name
            target.original_op.output_index = spec.original_index
            target.original_op.data_type = target.data_type
            if spec.original_format is not None:
                target.original_op.format = DUMP_FORMAT[spec.original_format]
        if inline:
            target.data = raw
        else:
            trailing += raw
    for buffer in buffers:
        added = dump.buffer.add(size=len(buffer))
        if inline:
            added.data = buffer
        else:
            trailing += buffer
    header = dump.SerializeToString()
    return struct.pack("<Q", len(header)) + header + bytes(trailing)
