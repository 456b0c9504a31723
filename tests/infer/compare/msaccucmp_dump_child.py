"""Child process of tests/infer/compare/msaccucmp_code.py: an NPU dump folder as msaccucmp's own code reads it.

    python msaccucmp_dump_child.py MSACCUCMP_FOLDER DUMP_FOLDER DESCRIPTORS.pb RESULTS.json ARRAYS.npz

msaccucmp's `DumpInfo` (dump_parse/dump.py) lists the folder (mapping.csv, OFFLINE_DUMP_PATTERN, `_lxslice` and
`sgt_graph` names, task types) and, per op it finds, `get_op_dump_data` sorts the op's files and puts FFTS+ slices
together (dump_parse/ffts_parser.py). One piece is replaced: its reader of a file's protobuf header, which needs
CANN's libascend_dump_parser.so (dump_parse/big_dump_data.py). In its place Google's protobuf decodes the header
with the DumpData definition in DESCRIPTORS.pb (a FileDescriptorSet), the bytes after it are dealt out in order
(inputs, outputs, buffers, workspaces, each `size` long), and msaccucmp's own DumpData class and DumpDataObj take
it from there (dump_utils.convert_dump_data: dtypes, bf16 through ml_dtypes, shapes).

RESULTS.json: {"error": code or null, "ops": {op: {"file", "op_name", "mode", "outputs"}}}; ARRAYS.npz holds each
op's outputs as msaccucmp holds them, `<op>/<index>`, reshaped to the shape it gives them.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from typing import Any

import numpy as np


def _decoder(descriptors: str) -> Any:
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    with open(descriptors, "rb") as handle:
        files = descriptor_pb2.FileDescriptorSet.FromString(handle.read())
    pool = descriptor_pool.DescriptorPool()
    for file in files.file:
        pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("toolkit.dumpdata.DumpData"))


def _as_dict(message: Any, trailing: bytes) -> dict[str, Any]:
    offset = 0

    def take(item: Any) -> bytes:
        nonlocal offset
        if item.data:
            return bytes(item.data)
        data = trailing[offset:offset + item.size]
        offset += item.size
        return data

    def tensor(item: Any, output: bool) -> dict[str, Any]:
        found = {"data_type": item.data_type, "format": item.format, "shape": {"dim": list(item.shape.dim)},
                 "data": take(item), "size": item.size, "original_shape": {"dim": list(item.original_shape.dim)},
                 "sub_format": item.sub_format, "address": item.address}
        if output:
            found["original_op"] = {"name": item.original_op.name, "output_index": item.original_op.output_index,
                                    "data_type": item.original_op.data_type, "format": item.original_op.format}
        return found

    inputs = [tensor(item, False) for item in message.input]
    outputs = [tensor(item, True) for item in message.output]
    buffers = [{"buffer_type": item.buffer_type, "data": take(item), "size": item.size} for item in message.buffer]
    return {"version": message.version, "dump_time": message.dump_time, "op_name": message.op_name,
            "input": inputs, "output": outputs, "buffer": buffers,
            "attr": [{"name": item.name, "value": item.value} for item in message.attr]}


def main(folder: str, dump_folder: str, descriptors: str, results_path: str, arrays_path: str) -> None:
    sys.path.insert(0, folder)
    dump_data_class = _decoder(descriptors)
    dump_utils: Any = importlib.import_module("dump_parse.dump_utils")
    proto: Any = importlib.import_module("dump_parse.proto_dump_data")
    dump: Any = importlib.import_module("dump_parse.dump")
    compare_error: Any = importlib.import_module("cmp_utils.constant.compare_error").CompareError

    def parse_dump_file(path: str, _version: int) -> Any:
        with open(path, "rb") as handle:
            data = handle.read()
        length = int.from_bytes(data[:8], "little")
        message = dump_data_class.FromString(data[8:8 + length])
        return dump_utils.convert_dump_data(proto.DumpData.from_dict(_as_dict(message, data[8 + length:])))

    dump_utils.parse_dump_file = parse_dump_file
    info = dump.DumpInfo(dump_folder, 1)
    results: dict[str, Any] = {"error": None, "ops": {}}
    arrays: dict[str, np.ndarray] = {}
    try:
        info.check_arguments_valid()
    except compare_error as error:
        results["error"] = error.code
    for op in sorted(info.op_name_to_file_map):
        try:
            path, data = info.get_op_dump_data(op)
        except compare_error as error:
            results["ops"][op] = {"error": error.code}
            continue
        for index, tensor in enumerate(data.output_data):
            values = np.asarray(tensor.data)
            shape = [int(d) for d in tensor.shape]
            arrays[f"{op}/{index}"] = values.reshape(shape) if values.size == int(np.prod(shape)) else values
        results["ops"][op] = {"file": os.path.basename(path), "op_name": data.op_name,
                              "mode": info.op_name_to_task_mode_map.get(op), "outputs": len(data.output_data)}
    with open(results_path, "w") as handle:
        json.dump(results, handle)
    np.savez(arrays_path, **arrays)  # type: ignore[arg-type]


if __name__ == "__main__":
    main(*sys.argv[1:6])
