"""The dump reader and the test writer held to Huawei's newest public DumpData definition: Ascend/tools
`msaicerr/ms_interface/dump_data_pb2.py` at 9d6da90 (fetched by scripts/fetch_ascend_fixtures.py as
msaicerr_dump_data_pb2.py). Its serialized descriptor is read out of the file as data (`ast`, never imported or
run); skipped where the folder INFER_ASCEND_FIXTURES names does not hold it.

What it shows: the writer the other dump tests use declares the same messages and fields (tests/atc_wrap/
test_npu_dump_forms.py leans on it, through msaccucmp); infer's format names are its OutputFormat's; a file
written by its own message class reads back exactly, bf16 included. The definition's OutputDataType stops at
DT_DUAL (25): DT_BF16 (27) is GE's DataType (graph/types.h, msaccucmp's DD.DT_BF16), which proto3's open enums
carry in the same field.
"""

from __future__ import annotations

import ast
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from atc_wrap.ascend_files.npu_dump import DUMP_FORMATS, read_npu_dump
from tests.atc_wrap.ascend_writer import dump_descriptor_set
from tests.real_files import needs_real_files, real_file

pytestmark = needs_real_files("msaicerr_dump_data_pb2.py")


def _huawei() -> descriptor_pb2.FileDescriptorProto:
    tree = ast.parse(real_file("msaicerr_dump_data_pb2.py").read_text())
    blobs = [ast.literal_eval(node.value) for node in ast.walk(tree)
             if isinstance(node, ast.keyword) and node.arg == "serialized_pb"]
    assert len(blobs) == 1
    return descriptor_pb2.FileDescriptorProto.FromString(blobs[0])


def _fields(file: descriptor_pb2.FileDescriptorProto) -> dict[str, dict[int, tuple[str, bool, bool]]]:
    """message -> field number -> (name, repeated, a message type): what decides the wire format."""
    return {message.name: {field.number: (field.name, field.label == field.LABEL_REPEATED,
                                          field.type == field.TYPE_MESSAGE) for field in message.field}
            for message in file.message_type}


def test_the_writer_declares_huaweis_messages_and_fields() -> None:
    theirs = _fields(_huawei())
    ours = _fields(descriptor_pb2.FileDescriptorSet.FromString(dump_descriptor_set()).file[0])
    ours["DumpData"].pop(99)  # the field the writer adds on purpose: what a newer CANN might, skipped by the reader
    theirs.pop("DimRange")  # OpOutput.dim_range's type: the writer leaves field 10 out, the reader skips it
    theirs["OpOutput"].pop(10)
    assert ours == theirs


def test_infers_format_names_are_the_definitions() -> None:
    (formats,) = [enum for enum in _huawei().enum_type if enum.name == "OutputFormat"]
    named = {value.number: value.name.removeprefix("FORMAT_") for value in formats.value if value.number != 255}
    assert {number: DUMP_FORMATS[number] for number in named} == named
    (types,) = [enum for enum in _huawei().enum_type if enum.name == "OutputDataType"]
    assert max(value.number for value in types.value) == 25  # DT_DUAL: no DT_BF16 in the public definition


def _message_class() -> Any:
    pool = descriptor_pool.DescriptorPool()
    pool.Add(_huawei())
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("toolkit.dumpdata.DumpData"))


def test_a_file_written_by_huaweis_definition_reads_back_exactly(tmp_path: Path) -> None:
    ml_dtypes = pytest.importorskip("ml_dtypes")
    rng = np.random.default_rng(27)
    half = rng.standard_normal((1, 1, 4, 4, 16)).astype(np.float16)
    bf16 = rng.standard_normal((2, 3)).astype(ml_dtypes.bfloat16)
    dump = _message_class()(version="2.0", dump_time=1_700_000_000_000_000, op_name="scope/conv")
    dump.attr.add(name="_sgt_json_info", value="{}")
    trailing = b""
    for array, data_type, fmt in ((half, 2, 3), (bf16.view(np.uint16), 27, 2)):  # NC1HWC0 fp16; ND bf16
        raw = array.tobytes()
        output = dump.output.add(data_type=data_type, format=fmt, size=len(raw))
        output.shape.dim.extend(array.shape)
        output.original_op.name = "scope/conv"
        trailing += raw
    header = dump.SerializeToString()
    path = tmp_path / "Conv2D.scope_conv.1.2.1700000000000000"
    path.write_bytes(struct.pack("<Q", len(header)) + header + trailing)
    read = read_npu_dump(path)
    assert read.op_name == "scope/conv" and read.attrs == (("_sgt_json_info", "{}"),) and not read.unknown_fields
    first, second = read.outputs
    assert (first.format, first.dtype, second.format, second.dtype) == ("NC1HWC0", "float16", "ND", "bfloat16")
    assert np.array_equal(first.array(), half)
    assert np.array_equal(second.array(), bf16.astype(np.float32))
