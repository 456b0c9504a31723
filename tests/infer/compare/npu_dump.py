"""A stand-in for an NPU's side of a msaccucmp comparison, written without CANN: dump files and a fusion rule.

An Ascend NPU dumps each op's tensors to a file named ``op_type.op_name.task_id.stream_id.timestamp`` (no
extension); the usual format has a protobuf header that msaccucmp hands to CANN's libascend_dump_parser.so, but
msaccucmp also reads a second format in plain Python, the "nano" dump (mindstudio-probe 26.2.0,
dump_parse/nano_dump_data.py), and tries it first. Its layout, as that file's tables read it (little-endian):

    uint64 header length | header | input data ... | output data ...
    header: uint32 0x5A5A5A5A | uint32 version | tag 4 (inputs) | tag 5 (outputs)
    tag N: uint32 tag | uint32 length | uint32 count | count descriptions
    output description: int32 data_type, format, address_type, original_index, original_data_type,
        original_format | uint64 address, offset, size | uint32 length of what follows | shape, original shape
        (tag 0 and 1: uint64 per dim) and origin name (tag 2: its bytes)

The fusion rule is the JSON ATC writes of an om (``atc --mode=1``), of which msaccucmp reads each op's name, type,
inputs, ``_datadump_original_op_names`` (the TensorFlow ops it computes) and each output's origin name and index
(vector_cmp/fusion_manager/fusion_rule_parser.py). Only those fields are written here.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

NANO_MAGIC = 0x5A5A5A5A
NANO_FLOAT32 = 0  # the nano format's own dtype numbering (nano_dump_data.py, NanoDataType.DT_FLOAT)
NANO_DTYPES = {np.dtype("float32"): 0, np.dtype("float16"): 1}  # NanoDataType.DT_FLOAT, DT_FLOAT16
FORMAT_ND = 2  # cmp_utils/constant/const_manager.py, DD.FORMAT_ND
# DD.FORMAT_* of const_manager.py, the numbers of the dump's OutputFormat
DD_FORMATS = {"NCHW": 0, "NHWC": 1, "ND": 2, "NC1HWC0": 3, "FRACTAL_Z": 4, "HWCN": 16, "FRACTAL_NZ": 29}


@dataclass(frozen=True)
class NpuOp:
    """One op of the om: its name and type on the device, the TF op it computes, and its outputs' values."""

    name: str
    op_type: str
    original: str  # the TensorFlow op name
    outputs: tuple[np.ndarray, ...]
    inputs: tuple[str, ...] = ()


def _tag(tag: int, body: bytes) -> bytes:
    return struct.pack("<II", tag, len(body)) + body


def _output_description(array: np.ndarray, origin: str) -> bytes:
    dims = struct.pack(f"<{array.ndim}Q", *array.shape)
    listed = _tag(0, dims) + _tag(1, dims) + _tag(2, origin.encode())
    return struct.pack("<6i3QI", NANO_FLOAT32, FORMAT_ND, 0, 0, NANO_FLOAT32, FORMAT_ND, 0, 0, array.nbytes,
                       len(listed)) + listed


def write_nano_dump(path: Path, outputs: tuple[np.ndarray, ...], origin: str) -> None:
    """One op's dump in the nano format: no inputs, `outputs` (float32) each with its TF op as origin name."""
    arrays = [np.ascontiguousarray(a, dtype="<f4") for a in outputs]
    described = struct.pack("<I", len(arrays)) + b"".join(_output_description(a, origin) for a in arrays)
    header = struct.pack("<II", NANO_MAGIC, 1) + _tag(4, struct.pack("<I", 0)) + _tag(5, described)
    path.write_bytes(struct.pack("<Q", len(header)) + header + b"".join(a.tobytes() for a in arrays))


@dataclass(frozen=True)
class NanoTensor:
    """One output in a nano dump: its device data (float32 or float16), format, and the framework's format,
    shape and op it stands for."""

    data: np.ndarray
    format: str
    origin_format: str
    origin_shape: tuple[int, ...]
    origin: str


def _nano_description(tensor: NanoTensor) -> bytes:
    dtype = NANO_DTYPES[tensor.data.dtype]
    shape = struct.pack(f"<{tensor.data.ndim}Q", *tensor.data.shape)
    origin_shape = struct.pack(f"<{len(tensor.origin_shape)}Q", *tensor.origin_shape)
    listed = _tag(0, shape) + _tag(1, origin_shape) + _tag(2, tensor.origin.encode())
    return struct.pack("<6i3QI", dtype, DD_FORMATS[tensor.format], 0, 0, dtype, DD_FORMATS[tensor.origin_format],
                       0, 0, tensor.data.nbytes, len(listed)) + listed


def write_nano_tensors(path: Path, tensors: list[NanoTensor]) -> None:
    """One op's dump in the nano format, no inputs, each output with its device format and origin."""
    arrays = [np.ascontiguousarray(t.data, dtype=t.data.dtype.newbyteorder("<")) for t in tensors]
    described = struct.pack("<I", len(tensors)) + b"".join(_nano_description(t) for t in tensors)
    header = struct.pack("<II", NANO_MAGIC, 1) + _tag(4, struct.pack("<I", 0)) + _tag(5, described)
    path.write_bytes(struct.pack("<Q", len(header)) + header + b"".join(a.tobytes() for a in arrays))


def dump_file_name(op: NpuOp, task: int, timestamp: int) -> str:
    return f"{op.op_type}.{op.name.replace('/', '_').replace('.', '_')}.{task}.1.{timestamp}"


def write_npu_dump(ops: list[NpuOp], folder: Path, timestamp: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for task, op in enumerate(ops):
        write_nano_dump(folder / dump_file_name(op, task, timestamp + task), op.outputs, op.original)


def _output_desc(original: str, index: int, shape: tuple[int, ...]) -> dict[str, object]:
    return {"dtype": "DT_FLOAT", "shape": {"dim": list(shape)},
            "attr": [{"key": "_datadump_origin_name", "value": {"s": original}},
                     {"key": "_datadump_origin_output_index", "value": {"i": index}},
                     {"key": "_datadump_origin_format", "value": {"s": "ND"}}]}


def write_fusion_rule(ops: list[NpuOp], path: Path) -> None:
    graph = [{"name": op.name, "type": op.op_type, "id": number, "input": list(op.inputs),
              "attr": [{"key": "_datadump_original_op_names", "value": {"list": {"s": [op.original]}}}],
              "output_desc": [_output_desc(op.original, index, a.shape) for index, a in enumerate(op.outputs)]}
             for number, op in enumerate(ops, start=1)]
    path.write_text(json.dumps({"graph": [{"name": "model", "op": graph}]}))
