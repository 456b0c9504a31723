"""What an .om says about its model, read from its MODEL_DEF partition without CANN: `read_om(path) -> OmModel`.

MODEL_DEF is a `ge.proto.ModelDef` (ge_ir.proto in mindspore-ai/graphengine): ModelDef{name = 1, version = 2,
custom_version = 3, graph = 7, attr = 11}; GraphDef{name = 1, input = 4, output = 5, op = 6, attr = 11};
OpDef{name = 1, type = 2, input = 5, attr = 10, id = 21, src_name = 24, src_index = 25, input_desc = 33,
output_desc = 34}; TensorDescriptor{name = 1, dtype = 2, shape = 3 (ShapeDef{dim = 1}), layout = 4, attr = 5,
size = 10}. graph[0] is the model's graph.

How GE's loader (DavinciModel in graphengine) makes the model's inputs and outputs out of it, followed here:
- inputs are the graph's Data, AippData and AnnData ops, ordered by their `index` attribute when they have one and
  by their place in the graph otherwise; an input's tensor is the Data op's input descriptor;
- outputs are the NetOutput op's inputs, in order; output i is named `attr_model_out_nodes_name[i]` (with
  `:src_index` added when it has no colon) when that list has one name per output, and
  `output_<i>_<src_name>_<src_index>` otherwise.
Dynamic gears (ATC's --dynamic_batch_size, --dynamic_image_size, --dynamic_dims) are stored on the op that
switches between them (a Case, later a StreamSwitchN): `_batch_num`, `_pred_value_<i>` (gear i),
`mbatch_dynamic_type` (1 batch, 2 image size, 3 dims), `user_designate_shape_order`, `_combined_batch_<i>`; the
NetOutput may carry `all_gears_info` ("1,224;2,448"). AIPP is a NamedAttrs `aipp` on a Data or AippData op.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from atc_wrap.ascend_files._protowire import Message, WireError
from atc_wrap.ascend_files.errors import OmFileError
from atc_wrap.ascend_files.ge_attrs import AttrValue, NamedAttrs, attr_json, attr_map, attr_value
from atc_wrap.ascend_files.om_file import FLOW_MODEL_TYPE, MODEL_DEF, OmFile, OmHeader, OmPartition, read_om_file
from binio.dtypes import ge_dtype_name
from binio.limits import PROTOBUF_LIMIT

DATA_OP_TYPES = ("Data", "AippData", "AnnData")
NET_OUTPUT_TYPE = "NetOutput"

ORIGINAL_OP_NAMES = "_datadump_original_op_names"
ORIGIN_NAME = "_datadump_origin_name"
ORIGIN_OUTPUT_INDEX = "_datadump_origin_output_index"
ORIGIN_DUMP_FORMAT = "_datadump_origin_format"
_TENSOR_ATTRS = frozenset({"origin_format", "origin_shape", "origin_data_type", ORIGIN_NAME, ORIGIN_OUTPUT_INDEX,
                           ORIGIN_DUMP_FORMAT})
_GEAR_TYPES = {0: "fixed", 1: "batch", 2: "image_size", 3: "dims"}

# The model attributes shown by name; the rest stay in `OmModel.attrs`.
_STRING_ATTRS = ("soc_version", "atc_version", "opp_version", "framework_type", "target_type", "atc_cmdline")


@dataclass(frozen=True)
class OmTensor:
    """A tensor as one of the om's descriptors stores it: the device's dtype, shape and format, and the
    framework's (origin) format and shape, from which a device layout is turned back."""

    dtype: str  # our name (float16) where binio knows it, else GE's (bfloat16)
    shape: tuple[int, ...]
    format: str  # GE's layout string: NHWC, NC1HWC0, FRACTAL_NZ, ...
    origin_format: str  # "" when the descriptor has none
    origin_shape: tuple[int, ...] | None
    size: int  # bytes, as GE computed them (aligned for Data outputs)
    origin_name: str  # `_datadump_origin_name`: the framework node whose output this is ("" when none)
    origin_output_index: int | None  # `_datadump_origin_output_index`
    origin_dump_format: str  # `_datadump_origin_format`


@dataclass(frozen=True)
class OmIo:
    """A model input or output: its name (as ACL reports it), position and tensor."""

    index: int
    name: str
    op_name: str  # the Data op, or the op feeding NetOutput
    tensor: OmTensor


@dataclass(frozen=True)
class OmOp:
    """One op of the om's graph, with what the fusion map needs."""

    name: str
    type: str
    id: int
    inputs: tuple[str, ...]  # "op:index" (index -1: a control edge)
    original_op_names: tuple[str, ...]  # `_datadump_original_op_names`: the framework nodes fused into this op
    input_descs: tuple[OmTensor, ...]
    output_descs: tuple[OmTensor, ...]


@dataclass(frozen=True)
class FusionEntry:
    """An op of the om with the framework nodes it came from, and where each of its outputs came from."""

    op_name: str
    op_type: str
    original_op_names: tuple[str, ...]
    outputs: tuple[OmTensor, ...]


@dataclass(frozen=True)
class DynamicGears:
    """The gears of a model converted with a dynamic batch, image size or dims."""

    kind: str  # batch, image_size, dims (fixed: the attribute says none), or unknown_<n>
    gears: tuple[tuple[int, ...], ...]
    shape_order: tuple[str, ...]  # `user_designate_shape_order`: the inputs the gear values belong to
    combined_batches: tuple[tuple[int, ...], ...]
    all_gears_info: str  # the NetOutput's `all_gears_info`, as written ("" when absent)
    op_name: str


@dataclass(frozen=True)
class AippConfig:
    """AIPP parameters an om carries for one input (the `aipp` NamedAttrs of its Data op)."""

    op_name: str
    params: tuple[tuple[str, AttrValue], ...]

    def get(self, key: str) -> AttrValue | None:
        return next((value for name, value in self.params if name == key), None)


@dataclass(frozen=True)
class OmModel:
    """What an om says about its model."""

    path: Path
    header: OmHeader
    partitions: tuple[OmPartition, ...]
    name: str
    ir_version: int  # ModelDef.version
    custom_version: str
    soc_version: str  # "" where ATC did not write it (older oms)
    atc_version: str
    opp_version: str
    framework_type: str  # "TensorFlow" as ATC writes it, or the number some versions store
    target_type: str
    atc_cmdline: str
    out_node_names: tuple[str, ...]  # `attr_model_out_nodes_name`: ATC's --out_nodes (or the pb's outputs)
    inputs: tuple[OmIo, ...]
    outputs: tuple[OmIo, ...]
    aipp: tuple[AippConfig, ...]
    gears: DynamicGears | None
    ops: tuple[OmOp, ...]
    attrs: tuple[tuple[str, AttrValue], ...]  # every ModelDef attribute (bytes kept as Opaque)

    def attr(self, key: str) -> AttrValue | None:
        return next((value for name, value in self.attrs if name == key), None)

    @property
    def op_counts(self) -> tuple[tuple[str, int], ...]:
        """(op type, count), most frequent first, then by name."""
        counts = Counter(op.type for op in self.ops)
        return tuple(sorted(counts.items(), key=lambda item: (-item[1], item[0])))

    @property
    def fusion_map(self) -> tuple[FusionEntry, ...]:
        """Every op that names the framework nodes it came from (on itself or on an output), in graph order."""
        return tuple(FusionEntry(op.name, op.type, op.original_op_names, op.output_descs) for op in self.ops
                     if op.original_op_names or any(out.origin_name for out in op.output_descs))

    def to_json(self) -> dict[str, Any]:
        """What `infer inspect MODEL.om --json` shows: header, partitions, model attributes, inputs and outputs,
        AIPP, gears, op counts and the fusion map (the ops' own descriptors and the raw attributes left out)."""
        header = asdict(self.header)
        header["version"] = f"0x{self.header.version:08X}"
        return {
            "schema": "infer.model_om-inspect", "version": 1,
            "path": str(self.path), "header": header, "partitions": [asdict(p) for p in self.partitions],
            "name": self.name, "ir_version": self.ir_version, "soc_version": self.soc_version,
            "atc_version": self.atc_version, "opp_version": self.opp_version, "framework_type": self.framework_type,
            "target_type": self.target_type, "atc_cmdline": self.atc_cmdline,
            "out_node_names": list(self.out_node_names),
            "inputs": [asdict(io) for io in self.inputs], "outputs": [asdict(io) for io in self.outputs],
            "aipp": [{"op_name": a.op_name, "params": {k: attr_json(v) for k, v in a.params}} for a in self.aipp],
            "gears": asdict(self.gears) if self.gears is not None else None,
            "op_count": len(self.ops), "op_counts": dict(self.op_counts),
            "fusion_map": [asdict(entry) for entry in self.fusion_map],
        }


def _shape(message: Message | None) -> tuple[int, ...]:
    return message.ints(1) if message is not None else ()


def _tensor(desc: Message) -> OmTensor:
    attrs = dict(attr_map(desc, 5, only=_TENSOR_ATTRS))
    origin_shape = attrs.get("origin_shape")
    origin_index = attrs.get(ORIGIN_OUTPUT_INDEX)
    return OmTensor(
        dtype=ge_dtype_name(desc.uint(2)), shape=_shape(desc.message(3, f"{desc.what}.shape")),
        format=desc.string(4), origin_format=_as_str(attrs.get("origin_format")),
        origin_shape=tuple(int(d) for d in origin_shape if isinstance(d, int)) if isinstance(origin_shape, tuple)
        else None,
        size=desc.int64(10), origin_name=_as_str(attrs.get(ORIGIN_NAME)),
        origin_output_index=origin_index if isinstance(origin_index, int) and not isinstance(origin_index, bool)
        else None,
        origin_dump_format=_as_str(attrs.get(ORIGIN_DUMP_FORMAT)))


def _as_str(value: AttrValue | None) -> str:
    return value if isinstance(value, str) else ""


def _ints(value: AttrValue | None) -> tuple[int, ...]:
    if not isinstance(value, tuple):
        return ()
    return tuple(v for v in value if isinstance(v, int) and not isinstance(v, bool))


def _strs(value: AttrValue | None) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, tuple):
        return ()
    return tuple(v for v in value if isinstance(v, str))


@dataclass(frozen=True)
class _RawOp:
    op: OmOp
    attrs: dict[str, AttrValue]
    src_names: tuple[str, ...]
    src_indexes: tuple[int, ...]


# Op attributes read beyond the fusion map: Data's index and AIPP, the gears, the NetOutput's gear string.
_OP_ATTRS = frozenset({ORIGINAL_OP_NAMES, "index", "aipp", "_batch_num", "mbatch_dynamic_type",
                       "user_designate_shape_order", "all_gears_info"})


def _wanted(key: str) -> bool:
    return key in _OP_ATTRS or key.startswith(("_pred_value_", "_combined_batch_"))


def _op(message: Message) -> _RawOp:
    name = message.string(1)
    attrs: dict[str, AttrValue] = {}
    for entry in message.messages(10, f"op {name!r} attr"):
        key = entry.string(1)
        if _wanted(key):
            attrs[key] = attr_value(entry.message(2, f"op {name!r} attr {key!r}"))
    op = OmOp(name=name, type=message.string(2), id=message.int64(21), inputs=message.strings(5),
              original_op_names=_strs(attrs.get(ORIGINAL_OP_NAMES)),
              input_descs=tuple(_tensor(d) for d in message.messages(33, f"op {name!r} input_desc")),
              output_descs=tuple(_tensor(d) for d in message.messages(34, f"op {name!r} output_desc")))
    return _RawOp(op, attrs, message.strings(24), message.ints(25))


def _inputs(ops: list[_RawOp]) -> tuple[OmIo, ...]:
    data = [raw for raw in ops if raw.op.type in DATA_OP_TYPES]
    ordered = sorted(enumerate(data), key=lambda item: (_index_of(item[1], item[0]), item[0]))
    found = []
    for position, (_, raw) in enumerate(ordered):
        descs = raw.op.input_descs or raw.op.output_descs
        if not descs:
            raise OmFileError(f"input op {raw.op.name!r} has no tensor descriptor")
        found.append(OmIo(index=position, name=raw.op.name, op_name=raw.op.name, tensor=descs[0]))
    return tuple(found)


def _index_of(raw: _RawOp, place: int) -> int:
    index = raw.attrs.get("index")
    return index if isinstance(index, int) and not isinstance(index, bool) else place


def _outputs(ops: list[_RawOp], out_node_names: tuple[str, ...]) -> tuple[OmIo, ...]:
    net_output = next((raw for raw in ops if raw.op.type == NET_OUTPUT_TYPE), None)
    if net_output is None:
        return ()
    descs = net_output.op.input_descs
    found = []
    for index, tensor in enumerate(descs):
        src_name = net_output.src_names[index] if index < len(net_output.src_names) else ""
        src_index = net_output.src_indexes[index] if index < len(net_output.src_indexes) else 0
        if len(out_node_names) == len(descs):
            given = out_node_names[index]
            name = given if ":" in given else f"{given}:{src_index}"
        else:
            name = f"output_{index}_{src_name}_{src_index}"
        found.append(OmIo(index=index, name=name, op_name=src_name, tensor=tensor))
    return tuple(found)


def _gears(ops: list[_RawOp]) -> DynamicGears | None:
    switch = next((raw for raw in ops if "_batch_num" in raw.attrs), None)
    gear_text = next((_as_str(raw.attrs.get("all_gears_info")) for raw in ops if "all_gears_info" in raw.attrs), "")
    if switch is None:
        return None if not gear_text else DynamicGears("unknown", (), (), (), gear_text, "")
    count = switch.attrs["_batch_num"]
    count = count if isinstance(count, int) else 0
    kind_value = switch.attrs.get("mbatch_dynamic_type")
    kind = _GEAR_TYPES.get(kind_value, f"unknown_{kind_value}") if isinstance(kind_value, int) else "unknown"
    return DynamicGears(
        kind=kind,
        gears=tuple(_ints(switch.attrs.get(f"_pred_value_{i}")) for i in range(min(count, 10_000))),
        shape_order=_strs(switch.attrs.get("user_designate_shape_order")),
        combined_batches=tuple(_ints(switch.attrs[f"_combined_batch_{i}"]) for i in range(min(count, 10_000))
                               if f"_combined_batch_{i}" in switch.attrs),
        all_gears_info=gear_text, op_name=switch.op.name)


def _aipp(ops: list[_RawOp]) -> tuple[AippConfig, ...]:
    return tuple(AippConfig(raw.op.name, value.attrs) for raw in ops
                 if isinstance(value := raw.attrs.get("aipp"), NamedAttrs))


def decode_model_def(data: bytes, om: OmFile) -> OmModel:
    """The model a MODEL_DEF partition holds; `om` is the file it came from (header, partitions, path)."""
    model = Message(data, what="ModelDef")
    attrs = attr_map(model, 11)
    attr = dict(attrs)
    graphs = model.messages(7, "ModelDef.graph")
    if not graphs:
        raise OmFileError(f"{om.path}: its MODEL_DEF holds no graph")
    raw_ops = [_op(op) for op in graphs[0].messages(6, "graph op")]
    out_node_names = _strs(attr.get("attr_model_out_nodes_name"))
    framework = attr.get("framework_type")
    strings = {key: _as_str(attr.get(key)) for key in _STRING_ATTRS}
    return OmModel(
        path=om.path, header=om.header, partitions=om.partitions, name=model.string(1), ir_version=model.uint(2),
        custom_version=model.string(3), soc_version=strings["soc_version"], atc_version=strings["atc_version"],
        opp_version=strings["opp_version"],
        framework_type=str(framework) if isinstance(framework, (str, int)) else "",
        target_type=strings["target_type"], atc_cmdline=strings["atc_cmdline"], out_node_names=out_node_names,
        inputs=_inputs(raw_ops), outputs=_outputs(raw_ops, out_node_names), aipp=_aipp(raw_ops),
        gears=_gears(raw_ops), ops=tuple(raw.op for raw in raw_ops), attrs=tuple(attrs))


def read_om(path: str | Path) -> OmModel:
    """The model in the om at `path`: header, inputs and outputs, AIPP, gears, ops and the fusion map. Refused
    with one line (OmFileError): not an om, truncated, encrypted, a flow model, or a MODEL_DEF that does not
    decode."""
    om = read_om_file(path)
    if om.header.model_type == FLOW_MODEL_TYPE:
        raise OmFileError(f"{om.path}: a flow model (modeltype {FLOW_MODEL_TYPE}): expected an offline model of one "
                          f"graph; flow models hold other oms, which this reader does not open")
    partition = om.partition(MODEL_DEF)
    if partition is None:
        kinds = ", ".join(p.name for p in om.partitions)
        raise OmFileError(f"{om.path}: no MODEL_DEF partition: expected one, found {kinds}")
    try:
        return decode_model_def(om.read(partition, limit=PROTOBUF_LIMIT), om)
    except WireError as err:
        raise OmFileError(f"{om.path}: its MODEL_DEF partition is not a GE ModelDef: {err}") from None
    except OmFileError as err:
        if str(om.path) in err.message:
            raise
        raise OmFileError(f"{om.path}: {err.message}") from None
