"""A stand-in for an Ascend NPU's dump, for the tests and the fake msame / ais_bench: which ops an om runs, what each
of them computes, and the dump files a device writes of them. Independent of infer's readers throughout.

- The om is read with google.protobuf, from the descriptors of tests/atc_wrap/ascend_writer.py (the public
  ge_ir.proto's numbers), not with atc_wrap's reader: its ops, their inputs, and each output's device dtype,
  format and shape, origin format and shape, and the TensorFlow tensor it holds (`_datadump_origin_name` and
  `_datadump_origin_output_index`; an op ATC left unfused and unrenamed is its own TF node).
- The values are TensorFlow's, on the pb the om was converted from (its `atc_cmdline` names it), each rounded to
  the op's device dtype. The device draws its own random numbers: every random op is fed a draw of its own. A
  damaged tensor (`damage`) is computed wrong on the device and the ops after it read the damaged value, as on a
  chip whose kernel for that op is broken.
- An op ATC inserted (TransData, Cast: no TF node) holds the value of its one input, in its own layout and dtype.
- The layouts are put in by tests/atc_wrap/npu_layout_reference.py, element by element.
- Dump files: the standard format by `ascend_writer.dump_bytes`, and msaccucmp's "nano" format by
  tests/infer/compare/npu_dump.py, with the same tensors; named `{op_type}.{op_name}.{task}.{stream}.{timestamp}`.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ckpt2pb.protobuf import read_graph_def
from tests.atc_wrap.ascend_writer import DumpTensorSpec, dump_bytes, message_class
from tests.atc_wrap.npu_layout_reference import nchw_to_nc1hwc0, nd_to_fractal_nz

_GE_DTYPES = {1: np.float32, 2: np.float16, 3: np.int8, 4: np.uint8, 7: np.int32}
_RANDOM_PREFIXES = ("Random", "TruncatedNormal")


def damaged(value: np.ndarray) -> np.ndarray:
    """What a broken kernel gives: every other element's sign flipped (cosine and RED both far off)."""
    flat = np.array(value, copy=True).reshape(-1)
    flat[::2] *= -1
    return flat.reshape(value.shape)


@dataclass(frozen=True)
class DeviceTensor:
    """One output (or input) of an om op as the device holds it."""

    tf_name: str  # the TensorFlow tensor it holds ("" for none known)
    dtype: Any  # numpy dtype of the device's data
    format: str
    shape: tuple[int, ...]
    origin_format: str
    origin_shape: tuple[int, ...]


@dataclass(frozen=True)
class DeviceOp:
    name: str
    type: str
    inputs: tuple[tuple[str, int], ...]  # (source op, output index), control edges left out
    input_descs: tuple[DeviceTensor, ...]
    outputs: tuple[DeviceTensor, ...]
    tf_nodes: tuple[str, ...]  # the TF nodes it computes: `_datadump_original_op_names`, or its own name
    has_fusion_attr: bool  # the om gives `_datadump_original_op_names` (else msaccucmp takes the op's own name)


@dataclass(frozen=True)
class DeviceModel:
    name: str
    ops: tuple[DeviceOp, ...]
    attrs: dict[str, str]


def _model_def_bytes(om: Path) -> bytes:
    """MODEL_DEF of an om with the 32-bit partition table (both public oms have it): header, count, records."""
    data = om.read_bytes()
    (count,) = struct.unpack_from("<I", data, 256)
    offset = 256 + 4 + 12 * count
    for index in range(count):
        kind, _, size = struct.unpack_from("<III", data, 256 + 4 + 12 * index)
        if kind == 0:
            return data[offset:offset + size]
        offset += size
    raise ValueError(f"{om}: no MODEL_DEF partition")


def _attr_text(attrs: Any, key: str) -> str:
    return bytes(attrs[key].s).decode() if key in attrs else ""


def _tensor(desc: Any, index: int, fallback: str) -> DeviceTensor:
    """`fallback`: the TF node an output without origin attributes belongs to (its op's one node), or ""."""
    attrs = desc.attr
    origin = _attr_text(attrs, "_datadump_origin_name")
    origin_index = attrs["_datadump_origin_output_index"].i if "_datadump_origin_output_index" in attrs else index
    tf_name = f"{origin}:{origin_index}" if origin else (f"{fallback}:{index}" if fallback else "")
    origin_shape = tuple(attrs["origin_shape"].list.i) if "origin_shape" in attrs else tuple(desc.shape.dim)
    return DeviceTensor(tf_name=tf_name, dtype=_GE_DTYPES.get(desc.dtype, np.float32), format=desc.layout,
                        shape=tuple(desc.shape.dim), origin_format=_attr_text(attrs, "origin_format") or desc.layout,
                        origin_shape=origin_shape)


def read_device_model(om: Path, tf_nodes: set[str]) -> DeviceModel:
    """The om's ops; `tf_nodes` (the pb's node names) says which unfused ops kept their TF name."""
    model = message_class("ge.proto.ModelDef").FromString(_model_def_bytes(om))
    attrs = {key: bytes(value.s).decode(errors="replace") for key, value in model.attr.items() if value.s}
    ops = []
    for op in model.graph[0].op:
        if "_datadump_original_op_names" in op.attr:
            fused = tuple(bytes(s).decode() for s in op.attr["_datadump_original_op_names"].list.s)
        else:
            fused = (op.name,) if op.name in tf_nodes else ()
        inputs = []
        for edge in op.input:
            source, _, index = edge.rpartition(":")
            if source and index != "-1":
                inputs.append((source, int(index)))
        single = fused[0] if len(fused) == 1 else ""
        outputs = tuple(_tensor(desc, i, single) for i, desc in enumerate(op.output_desc))
        input_descs = tuple(_tensor(desc, i, "") for i, desc in enumerate(op.input_desc))
        ops.append(DeviceOp(op.name, op.type, tuple(inputs), input_descs, outputs, fused,
                            "_datadump_original_op_names" in op.attr))
    return DeviceModel(model.name, tuple(ops), attrs)


def pb_of(model: DeviceModel) -> Path | None:
    """The pb ATC converted, from the om's `atc_cmdline` (``--model=PATH``)."""
    found = re.search(r"--model=(\S+)", model.attrs.get("atc_cmdline", ""))
    return Path(found.group(1)) if found else None


def tf_node_names(pb: Path) -> set[str]:
    return {node.name for node in read_graph_def(pb).node}


def _load(pb: Path) -> Any:
    import tensorflow as tf

    graph_def = read_graph_def(pb)
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.import_graph_def(graph_def, name="")
    return graph


def device_values(pb: Path, model: DeviceModel, feeds: dict[str, np.ndarray], *, damage: str = "",
                  seed: int = 11) -> dict[str, np.ndarray]:
    """Every TF tensor the om's ops hold, as the device computes it (origin layout, fp32 arithmetic)."""
    import tensorflow as tf

    graph = _load(pb)
    wanted = sorted({t.tf_name for op in model.ops for t in op.outputs if t.tf_name}
                    | {name for name in feeds})
    present = [name for name in wanted if _has_tensor(graph, name)]
    rng = np.random.default_rng(seed)
    fed = {graph.get_tensor_by_name(name): value for name, value in feeds.items()}
    for name in present:
        tensor = graph.get_tensor_by_name(name)
        if tensor.op.type.startswith(_RANDOM_PREFIXES):
            fed[tensor] = rng.standard_normal(tensor.shape.as_list()).astype(tensor.dtype.as_numpy_dtype)
    with tf.compat.v1.Session(graph=graph) as session:
        if damage:
            target = graph.get_tensor_by_name(damage)
            value = session.run(target, feed_dict=fed)
            fed[target] = damaged(value)
        values = session.run(present, feed_dict=fed)
    return {name: np.asarray(value) for name, value in zip(present, values, strict=True)}


def _has_tensor(graph: Any, name: str) -> bool:
    try:
        graph.get_tensor_by_name(name)
    except (KeyError, ValueError):
        return False
    return True


def device_layout(value: np.ndarray, tensor: DeviceTensor) -> np.ndarray:
    """`value` (origin format and shape) in the device's format, shape and dtype."""
    origin = np.asarray(value).reshape(tensor.origin_shape).astype(tensor.dtype)
    if tensor.format == "NC1HWC0":
        nchw = origin.transpose(0, 3, 1, 2) if tensor.origin_format == "NHWC" else origin
        return nchw_to_nc1hwc0(nchw, tensor.shape[4])
    if tensor.format == "FRACTAL_NZ":
        return nd_to_fractal_nz(origin, tensor.shape[-2], tensor.shape[-1])
    if tensor.format == tensor.origin_format or tensor.format in ("ND", "NHWC", "NCHW"):
        return origin.reshape(tensor.shape)
    raise ValueError(f"no device layout {tensor.format} here")


@dataclass(frozen=True)
class DumpedOp:
    """One op's dump: its tensors in the device layout."""

    op: DeviceOp
    inputs: tuple[tuple[DeviceTensor, np.ndarray], ...]
    outputs: tuple[tuple[DeviceTensor, np.ndarray], ...]


def dumped_ops(model: DeviceModel, values: dict[str, np.ndarray]) -> list[DumpedOp]:
    """The ops a device dumps (those with outputs it computed: not Data, Const or NetOutput), each with its
    inputs and outputs in the device layout. An op with no TF tensor (ATC's TransData, Cast) holds its input."""
    by_name = {op.name: op for op in model.ops}
    origin: dict[tuple[str, int], np.ndarray] = {}  # (op, output) -> the value in the origin layout
    for op in model.ops:
        for index, tensor in enumerate(op.outputs):
            if tensor.tf_name in values:
                origin[(op.name, index)] = values[tensor.tf_name]
            elif op.type == "Data":
                origin[(op.name, index)] = values.get(f"{op.name}:0", np.zeros(0))
            elif len(op.inputs) == 1 and op.inputs[0] in origin:
                origin[(op.name, index)] = origin[op.inputs[0]]
    dumped = []
    for op in model.ops:
        if op.type in ("Data", "Const", "NetOutput") or not all((op.name, i) in origin for i in range(len(op.outputs))):
            continue
        outputs = tuple((t, device_layout(origin[(op.name, i)], t)) for i, t in enumerate(op.outputs))
        inputs = []
        for (source, index), desc in zip(op.inputs, op.input_descs or [None] * len(op.inputs), strict=False):
            known = origin.get((source, index))
            producer = by_name.get(source)
            if known is None or producer is None or producer.type == "Const":
                continue  # weights: not computed here
            tensor = desc if desc is not None else producer.outputs[index]
            inputs.append((tensor, device_layout(known, tensor)))
        dumped.append(DumpedOp(op, tuple(inputs), outputs))
    return dumped


def dump_file_name(op: DeviceOp, task: int, timestamp: int) -> str:
    safe = op.name.replace("/", "_").replace(".", "_")
    return f"{op.type}.{safe}.{task}.1.{timestamp:016d}"


def _spec(tensor: DeviceTensor, data: np.ndarray, original: bool) -> DumpTensorSpec:
    node, _, index = tensor.tf_name.rpartition(":")
    return DumpTensorSpec(data=data, format=tensor.format, original_name=node if original else "",
                          original_index=int(index) if original and index else 0,
                          original_format=tensor.origin_format if original and node else None,
                          original_shape=tensor.origin_shape)


def write_standard_dumps(folder: Path, dumped: Sequence[DumpedOp], *, mode: str = "output",
                         timestamp: int = 1_700_000_000_000_000) -> list[Path]:
    """One dump file per op, the standard format (DumpData), inputs and/or outputs per `mode` (acl.json's
    dump_mode: output, input, all)."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for task, item in enumerate(dumped):
        inputs = [_spec(t, d, False) for t, d in item.inputs] if mode in ("input", "all") else []
        outputs = [_spec(t, d, True) for t, d in item.outputs] if mode in ("output", "all") else []
        path = folder / dump_file_name(item.op, task, timestamp + task)
        path.write_bytes(dump_bytes(item.op.name, inputs, outputs))
        written.append(path)
    return written


def write_nano_dumps(folder: Path, dumped: Sequence[DumpedOp], *, timestamp: int = 1_700_000_000_000_000) -> None:
    """The same ops' outputs in msaccucmp's nano format, with the fusion rule (JSON) msaccucmp reads beside."""
    from tests.infer.compare.npu_dump import NanoTensor, write_nano_tensors

    folder.mkdir(parents=True, exist_ok=True)
    for task, item in enumerate(dumped):
        tensors = [NanoTensor(data, t.format, t.origin_format, t.origin_shape, t.tf_name.rpartition(":")[0])
                   for t, data in item.outputs]
        write_nano_tensors(folder / dump_file_name(item.op, task, timestamp + task), tensors)


def write_fusion_rule(model: DeviceModel, path: Path) -> None:
    """The om as ATC's JSON (``atc --mode=1``) gives msaccucmp what it reads: each op's name, type, id, inputs,
    `_datadump_original_op_names` where the om has it, and each output's origin name, index, format and shape."""
    import json

    def output_desc(tensor: DeviceTensor) -> dict[str, object]:
        node, _, index = tensor.tf_name.rpartition(":")
        attrs: list[dict[str, object]] = [{"key": "origin_format", "value": {"s": tensor.origin_format}},
                                          {"key": "origin_shape", "value": {"list": {"i": list(tensor.origin_shape)}}}]
        if node:
            attrs += [{"key": "_datadump_origin_name", "value": {"s": node}},
                      {"key": "_datadump_origin_output_index", "value": {"i": int(index)}},
                      {"key": "_datadump_origin_format", "value": {"s": tensor.origin_format}}]
        return {"dtype": "DT_FLOAT16" if tensor.dtype == np.float16 else "DT_FLOAT", "layout": tensor.format,
                "shape": {"dim": list(tensor.shape)}, "attr": attrs}

    ops = []
    for number, op in enumerate(model.ops):
        entry: dict[str, object] = {"name": op.name, "type": op.type, "id": number,
                                    "input": [f"{source}:{index}" for source, index in op.inputs],
                                    "output_desc": [output_desc(t) for t in op.outputs]}
        if op.has_fusion_attr:
            names = {"s": list(op.tf_nodes)} if op.tf_nodes else {}
            entry["attr"] = [{"key": "_datadump_original_op_names", "value": {"list": names}}]
        ops.append(entry)
    path.write_text(json.dumps({"name": model.name, "graph": [{"name": f"{model.name}_0", "op": ops}]}))
