"""Dump files written by the test's own writer for the sample om's ops read back: each tensor's dtype, format,
shape and original name, its bytes, and the framework tensor it holds once its layout is turned back with the om's
origin format and shape."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from atc_wrap.ascend_files.errors import LayoutError, NpuDumpError
from atc_wrap.ascend_files.npu_dump import read_npu_dump
from atc_wrap.ascend_files.om_model import read_om
from tests.atc_wrap.ascend_samples import CONV, MATMUL, write_sample_om
from tests.atc_wrap.ascend_writer import DumpTensorSpec, dump_bytes
from tests.atc_wrap.npu_layout_reference import nchw_to_nc1hwc0, nd_to_fractal_nz

RNG = np.random.default_rng(7)


def _write(folder: Path, name: str, data: bytes) -> Path:
    path = folder / name
    path.write_bytes(data)
    return path


def test_an_nc1hwc0_output_turns_back_into_the_oms_nhwc_origin(tmp_path: Path) -> None:
    model = read_om(write_sample_om(tmp_path))
    conv = next(op for op in model.ops if op.name == CONV)
    (out,) = conv.output_descs
    assert out.origin_shape is not None
    nhwc = RNG.standard_normal(out.origin_shape).astype(np.float16)
    device = nchw_to_nc1hwc0(nhwc.transpose(0, 3, 1, 2), 16)
    assert device.shape == out.shape
    image = RNG.standard_normal((2, 8, 8, 1)).astype(np.float16)
    path = _write(tmp_path, "Conv2D.scope_conv_Conv2D.3.2.1700000000000001", dump_bytes(
        CONV, [DumpTensorSpec(image, "NHWC")],
        [DumpTensorSpec(device, "NC1HWC0", original_name=out.origin_name, original_index=0)]))
    dump = read_npu_dump(path)
    assert dump.op_name == CONV
    (dumped,) = dump.outputs
    assert (dumped.dtype, dumped.format, dumped.shape, dumped.original_name, dumped.original_output_index) == \
        ("float16", "NC1HWC0", (2, 2, 4, 4, 16), "scope/conv/add", 0)
    assert np.array_equal(dumped.array(), device)
    assert np.array_equal(dumped.origin_array(out.origin_format, out.origin_shape), nhwc)
    (dumped_input,) = dump.inputs
    assert np.array_equal(dumped_input.origin_array("NHWC", (2, 8, 8, 1)), image)
    assert dump.file_name is not None and (dump.file_name.op_type, dump.file_name.task_id) == ("Conv2D", 3)


def test_a_fractal_nz_output_turns_back_into_the_oms_nd_origin(tmp_path: Path) -> None:
    model = read_om(write_sample_om(tmp_path))
    (out,) = next(op for op in model.ops if op.name == MATMUL).output_descs
    assert out.origin_shape == (2, 10)
    matrix = RNG.standard_normal(out.origin_shape).astype(np.float16)
    device = nd_to_fractal_nz(matrix)
    assert device.shape == out.shape
    path = _write(tmp_path, "MatMulV2.scope_dense_MatMul.5.1700000000000002", dump_bytes(
        MATMUL, [], [DumpTensorSpec(device, "FRACTAL_NZ", original_name=out.origin_name)]))
    (dumped,) = read_npu_dump(path).outputs
    assert np.array_equal(dumped.origin_array(out.origin_format, out.origin_shape), matrix)


def test_a_newer_dump_carries_its_own_origin_format_and_shape(tmp_path: Path) -> None:
    matrix = RNG.standard_normal((3, 20)).astype(np.float16)
    path = _write(tmp_path, "d", dump_bytes("m", [], [DumpTensorSpec(
        nd_to_fractal_nz(matrix), "FRACTAL_NZ", original_name="dense/MatMul", original_format="ND",
        original_shape=(3, 20))]))
    (dumped,) = read_npu_dump(path).outputs
    assert (dumped.original_format, dumped.original_shape) == ("ND", (3, 20))
    assert np.array_equal(dumped.origin_array(), matrix)


def test_without_an_origin_the_conversion_asks_for_the_oms(tmp_path: Path) -> None:
    path = _write(tmp_path, "d", dump_bytes("m", [], [DumpTensorSpec(np.zeros((1, 1, 16, 16), np.float16),
                                                                      "FRACTAL_NZ")]))
    (dumped,) = read_npu_dump(path).outputs
    with pytest.raises(LayoutError, match="origin format and shape are not in the dump: expected them from the om"):
        dumped.origin_array()


def test_buffers_attrs_and_fields_a_newer_cann_adds(tmp_path: Path) -> None:
    path = _write(tmp_path, "d", dump_bytes(
        "op", [DumpTensorSpec(np.arange(4, dtype=np.int32), "ND")], [DumpTensorSpec(np.ones(3, np.float32), "ND")],
        buffers=[b"L1-bytes"], attrs=[("ws_size", "64")], future_field="unknown to this reader"))
    dump = read_npu_dump(path)
    assert dump.unknown_fields == ("DumpData.99",)
    assert dump.attrs == (("ws_size", "64"),)
    (buffer,) = dump.buffers
    assert buffer.raw == b"L1-bytes"
    assert dump.inputs[0].array().tolist() == [0, 1, 2, 3]
    assert dump.outputs[0].array().tolist() == [1.0, 1.0, 1.0]
    # the bytes follow the header in the order inputs, outputs, buffers
    assert dump.inputs[0].data_offset < dump.outputs[0].data_offset < buffer.data_offset


def test_tensor_bytes_inside_the_message_are_read_too(tmp_path: Path) -> None:
    path = _write(tmp_path, "d", dump_bytes("op", [], [DumpTensorSpec(np.arange(6, dtype=np.float32), "ND")],
                                            inline=True))
    (dumped,) = read_npu_dump(path).outputs
    assert dumped.data_offset == -1
    assert dumped.array().tolist() == [0, 1, 2, 3, 4, 5]


@pytest.mark.parametrize(("data", "says"), [
    (b"\x01\x02", r"not an NPU dump file: expected an 8-byte header length, the file has 2 bytes"),
    ((10**6).to_bytes(8, "little") + b"abc", r"its first 8 bytes declare a 1000000-byte header, 3 bytes follow"),
    ((3).to_bytes(8, "little") + b"\x0a\x05a", r"its 3-byte header is not a DumpData message: DumpData: field 1"),
])
def test_what_is_not_a_dump_is_refused_in_one_line(tmp_path: Path, data: bytes, says: str) -> None:
    with pytest.raises(NpuDumpError, match=says):
        read_npu_dump(_write(tmp_path, "x.bin", data))


def test_tensor_sizes_that_do_not_add_up_are_refused(tmp_path: Path) -> None:
    data = dump_bytes("op", [], [DumpTensorSpec(np.ones(8, np.float32), "ND")])
    with pytest.raises(NpuDumpError, match=r"its tensors declare 32 bytes of data after the \d+-byte header, "
                                           r"the file has 31"):
        read_npu_dump(_write(tmp_path, "cut", data[:-1]))


def test_a_shape_that_needs_more_bytes_than_the_dump_holds_is_refused_on_reading_the_array(tmp_path: Path) -> None:
    path = _write(tmp_path, "d", dump_bytes("op", [], [DumpTensorSpec(np.ones(2, np.float32), "ND", shape=(3,))]))
    (dumped,) = read_npu_dump(path).outputs
    with pytest.raises(NpuDumpError, match=r"output 0: shape \(3,\) float32 takes 12 bytes, the dump holds 8"):
        dumped.array()


def test_bytes_past_the_shape_are_padding_and_the_first_ones_are_the_tensor(tmp_path: Path) -> None:
    # GE sizes an AIPP Data input's dump by the image (input_origin_size), aligned: more bytes than the shape;
    # msaccucmp reads the first prod(shape) elements (dump_data_object.py, data[:cur_byte * cnt]), and so does infer
    values = np.arange(8, dtype=np.float32)
    path = _write(tmp_path, "d", dump_bytes("op", [], [DumpTensorSpec(values, "ND", shape=(3,))]))
    (dumped,) = read_npu_dump(path).outputs
    assert np.array_equal(dumped.array(), values[:3])
    assert dumped.padding == 20


def test_the_bin_info_json_describes_the_tensors_without_their_bytes(tmp_path: Path) -> None:
    import json

    path = _write(tmp_path, "Relu.relu.1.1700000000000001", dump_bytes(
        "relu", [], [DumpTensorSpec(np.ones(4, np.float32), "ND", original_name="relu")]))
    shown = json.loads(json.dumps(read_npu_dump(path).to_json()))
    (output,) = shown["outputs"]
    assert "raw" not in output
    assert (output["dtype"], output["shape"], output["size"], output["original_name"]) == ("float32", [4], 16, "relu")
    assert shown["file_name"]["op_type"] == "Relu"
