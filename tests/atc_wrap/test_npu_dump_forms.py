"""Dump folders in the forms CANN writes them, read by infer and by msaccucmp's own folder code on the same files
(mindstudio-probe 26.2.0: dump_parse/dump.py, mapping.py, ffts_parser.py, dump_data_object.py; run by
tests/infer/compare/msaccucmp_dump_child.py, the files' protobuf headers decoded with the DumpData definition the
test writer declares, which tests/atc_wrap/test_dump_definition.py holds to Huawei's): long names and mapping.csv,
FFTS+ thread slices (automatic and manual), bf16 tensors, AIPP inputs sized as the image, the name forms
OFFLINE_DUMP_PATTERN admits, several dumps of one op. Where infer departs, the test says so and why."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from atc_wrap.ascend_files.dump_names import parse_dump_file_name, sliced_op_name
from atc_wrap.ascend_files.dump_slices import OpDump, group_op_files, op_dump
from atc_wrap.ascend_files.errors import NpuDumpError
from atc_wrap.ascend_files.npu_dump import read_npu_dump, walk_dump_folder
from tests.atc_wrap.ascend_writer import DumpTensorSpec, dump_bytes, dump_descriptor_set
from tests.infer.compare.msaccucmp_code import MsaccucmpDumps, msaccucmp_dump_folder

RNG = np.random.default_rng(40)
TS = 1_700_000_000_000_000
LONG_OP = "bert/encoder/layer_11/attention/self/" + "/".join(f"scope_{i:03d}" for i in range(60)) + "/MatMul"
GE_BF16 = 27


def _infer(folder: Path) -> dict[str, OpDump]:
    groups, _ = group_op_files(walk_dump_folder(folder).entries)
    return {files.op_name: op_dump(files, lambda entry: read_npu_dump(entry.path, entry.name)) for files in groups}


def _msaccucmp(folder: Path, work: Path) -> MsaccucmpDumps:
    return msaccucmp_dump_folder(folder, dump_descriptor_set(), work)


def _safe(name: str) -> str:
    return name.replace("/", "_").replace(".", "_")


def _write(folder: Path, name: str, op_name: str, outputs: list[DumpTensorSpec], *,
           attrs: tuple[tuple[str, str], ...] = ()) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(dump_bytes(op_name, [], outputs, attrs=attrs))
    return path


def test_a_long_name_written_as_a_number_is_read_through_mapping_csv(tmp_path: Path) -> None:
    step = tmp_path / "step"
    real = f"MatMulV2.{_safe(LONG_OP)}.3.2.{TS}"
    assert len(real) > 255  # CANN writes such a name as a number (msprobe's dump documentation)
    value = RNG.standard_normal((4, 8)).astype(np.float16)
    _write(step, "1" * 32, LONG_OP, [DumpTensorSpec(value, "ND")])
    (step / "mapping.csv").write_text(f"{'1' * 32},{real}\n")
    _write(step, f"Relu.relu.4.2.{TS + 1}", "relu", [DumpTensorSpec(value, "ND")])
    ours = _infer(step)
    assert set(ours) == {_safe(LONG_OP), "relu"}
    assert ours[_safe(LONG_OP)].dump.op_name == LONG_OP
    theirs = _msaccucmp(step, tmp_path / "msaccucmp")
    assert theirs.error is None and set(theirs.ops) == set(ours)
    assert theirs.ops[_safe(LONG_OP)]["file"] == "1" * 32
    assert np.array_equal(theirs.outputs[_safe(LONG_OP)][0], ours[_safe(LONG_OP)].dump.outputs[0].array())


def test_a_number_no_mapping_csv_names_is_set_apart_not_read(tmp_path: Path) -> None:
    _write(tmp_path, "9" * 32, "x", [DumpTensorSpec(np.zeros(2, np.float32), "ND")])
    (tmp_path / "mapping.csv").write_text(f"{'8' * 32},Add.add.1.{TS}\nnot,a,row\n")
    found = walk_dump_folder(tmp_path)
    assert found.entries == () and found.unmapped == (tmp_path / ("9" * 32),)


def _sliced(full: np.ndarray, axis: int, count: int) -> list[np.ndarray]:
    return np.array_split(full, count, axis=axis)


def _slice_json(parts: list[np.ndarray], cut: list[int], *, auto: bool) -> str:
    """The FFTS+ slicing record msaccucmp reads from a dump's first attr: slices, thread mode, cut list and, in
    automatic mode, each thread's range per dim."""
    ranges, start = [], 0
    axis = next(i for i, value in enumerate(cut) if value != 1)
    for part in parts:
        dims = []
        for dim, size in enumerate(part.shape):
            lower = start if dim == axis else 0
            dims.append({"lower": lower, "higher": lower + size})
        ranges.append([dims])
        start += part.shape[axis]
    return json.dumps({"slice_instance_num": len(parts), "threadMode": 1 if auto else 0, "outputCutList": [cut],
                       "output_tensor_slice": ranges if auto else []})


def test_ffts_plus_automatic_slices_are_put_together_as_msaccucmp_does(tmp_path: Path) -> None:
    # The case: two thread slices of a (2, 1, 4, 4, 16) NC1HWC0 output; infer kept the first, (1, 1, 4, 4, 16)
    full = RNG.standard_normal((2, 1, 4, 4, 16)).astype(np.float16)
    parts = _sliced(full, 0, 2)
    record = _slice_json(parts, [2, 1, 1, 1, 1], auto=True)
    for thread, part in enumerate(parts):  # task type 4 (FFTS+), context 7, thread id, device 0
        _write(tmp_path, f"Conv2D.scope_conv.5.1.{TS + 10 - thread}.4.7.{thread}.0", "scope/conv",
               [DumpTensorSpec(part, "NC1HWC0")], attrs=(("_sgt_json_info", record),))
    ours = _infer(tmp_path)["scope_conv"]
    assert ours.files.mode == "auto" and len(ours.dump.slices) == 2
    assert ours.dump.outputs[0].shape == (2, 1, 4, 4, 16)
    assert np.array_equal(ours.dump.outputs[0].array(), full)
    assert "2 thread slices put together into [2, 1, 4, 4, 16]" in ours.note
    theirs = _msaccucmp(tmp_path, tmp_path.parent / "msaccucmp")
    assert theirs.error is None and theirs.ops["scope_conv"]["mode"] == 1
    assert np.array_equal(theirs.outputs["scope_conv"][0], ours.dump.outputs[0].array())


def test_ffts_plus_manual_slices_lose_their_lxslice_and_sgt_graph_as_msaccucmp_strips_them(tmp_path: Path) -> None:
    full = RNG.standard_normal((1, 3, 6, 4, 16)).astype(np.float16)
    parts = _sliced(full, 2, 3)
    record = _slice_json(parts, [1, 1, 3, 1, 1], auto=False)
    for index, part in enumerate(parts):  # msaccucmp's own example of the form (dump_utils.py, _parameter_manual)
        name = f"partition0_rank2_new_sub_graph15_sgt_graph_0_fp32_vars_conv2d_39_Conv2D_lxslice{index}"
        _write(tmp_path, f"Conv2D.{name}.2.9.{TS + index}.4.487.0.0", f"fp32_vars/conv2d_39/Conv2D_lxslice{index}",
               [DumpTensorSpec(part, "NC1HWC0")], attrs=(("_sgt_json_info", record),))
    ours = _infer(tmp_path)
    assert set(ours) == {"fp32_vars_conv2d_39_Conv2D"}
    merged = ours["fp32_vars_conv2d_39_Conv2D"]
    assert merged.files.mode == "manual" and merged.dump.op_name == "fp32_vars/conv2d_39/Conv2D"
    assert np.array_equal(merged.dump.outputs[0].array(), full)
    theirs = _msaccucmp(tmp_path, tmp_path.parent / "msaccucmp")
    assert theirs.error is None and set(theirs.ops) == set(ours) and theirs.ops[next(iter(ours))]["mode"] == 2
    assert theirs.ops["fp32_vars_conv2d_39_Conv2D"]["op_name"] == merged.dump.op_name
    assert np.array_equal(theirs.outputs["fp32_vars_conv2d_39_Conv2D"][0], merged.dump.outputs[0].array())


def test_ffts_plus_slices_with_no_cut_leave_the_last_file(tmp_path: Path) -> None:
    record = json.dumps({"slice_instance_num": 2, "threadMode": 1, "outputCutList": [[1, 1]],
                         "output_tensor_slice": []})
    first, last = np.zeros((2, 2), np.float32), np.ones((2, 2), np.float32)
    for thread, value in enumerate((first, last)):
        _write(tmp_path, f"Add.add.5.1.{TS + thread}.4.7.{thread}.0", "add", [DumpTensorSpec(value, "ND")],
               attrs=(("_sgt_json_info", record),))
    ours = _infer(tmp_path)["add"]
    assert np.array_equal(ours.dump.outputs[0].array(), last) and "with no dim cut" in ours.note
    theirs = _msaccucmp(tmp_path, tmp_path.parent / "msaccucmp")
    assert np.array_equal(theirs.outputs["add"][0], last)


def test_ffts_plus_slices_that_do_not_fit_are_refused_naming_the_files(tmp_path: Path) -> None:
    record = json.dumps({"slice_instance_num": 2, "threadMode": 1, "outputCutList": [[2, 1]],
                         "output_tensor_slice": [[[{"lower": 0, "higher": 1}, {"lower": 0, "higher": 4}]]]})
    for thread in range(2):
        _write(tmp_path, f"Add.add.5.1.{TS + thread}.4.7.{thread}.0", "add",
               [DumpTensorSpec(np.zeros((1, 4), np.float32), "ND")], attrs=(("_sgt_json_info", record),))
    (files,), _ = group_op_files(walk_dump_folder(tmp_path).entries)
    with pytest.raises(NpuDumpError, match=r"its 2 FFTS\+ slices cannot be put together: .*thread 1"):
        op_dump(files, lambda entry: read_npu_dump(entry.path, entry.name))


def test_an_lxslice_inside_an_op_name_is_left_out_as_msaccucmp_leaves_it(tmp_path: Path) -> None:
    zeros = [DumpTensorSpec(np.zeros(2, np.float32), "ND")]
    _write(tmp_path, f"Conv2D.conv_lxslice1_x.2.9.{TS}.4.487.0.0", "conv", zeros)
    _write(tmp_path, f"Add.add.2.9.{TS}", "add", [DumpTensorSpec(np.zeros(2, np.float32), "ND")])
    groups, left_out = group_op_files(walk_dump_folder(tmp_path).entries)
    assert [files.op_name for files in groups] == ["add"] and len(left_out) == 1
    assert sliced_op_name("conv_lxslice1_x") is None
    assert set(_msaccucmp(tmp_path, tmp_path.parent / "msaccucmp").ops) == {"add"}


@pytest.mark.slow
def test_bf16_tensors_read_as_float32_with_their_values_as_msaccucmp_reads_them(tmp_path: Path) -> None:
    ml_dtypes = pytest.importorskip("ml_dtypes")  # TensorFlow brings it; the reader itself needs only numpy
    values = (RNG.standard_normal((3, 5)) * 100).astype(ml_dtypes.bfloat16)
    _write(tmp_path, f"MatMulV2.mm.1.2.{TS}", "mm", [DumpTensorSpec(values.view(np.uint16), "ND",
                                                                    ge_dtype=GE_BF16)])
    (tensor,) = read_npu_dump(tmp_path / f"MatMulV2.mm.1.2.{TS}").outputs
    assert tensor.dtype == "bfloat16"
    ours = tensor.array()
    assert ours.dtype == np.float32 and np.array_equal(ours, values.astype(np.float32))
    theirs = _msaccucmp(tmp_path, tmp_path.parent / "msaccucmp")
    assert theirs.outputs["mm"][0].dtype == np.float32 and np.array_equal(theirs.outputs["mm"][0], ours)


def test_an_aipp_input_sized_as_the_image_reads_as_msaccucmp_reads_it(tmp_path: Path) -> None:
    # GE records an AIPP Data's dump at input_origin_size (data_dumper.cc): the image's size, aligned, not the
    # shape's; msaccucmp reads the first prod(shape) values (data[:cur_byte * cnt]), and so does infer
    image = RNG.integers(0, 255, (1, 4, 4, 3), dtype=np.uint8)
    _write(tmp_path, f"Data.input.1.2.{TS}", "input", [DumpTensorSpec(image, "NHWC", padding=bytes(16))])
    (tensor,) = read_npu_dump(tmp_path / f"Data.input.1.2.{TS}").outputs
    assert tensor.padding == 16 and np.array_equal(tensor.array(), image)
    theirs = _msaccucmp(tmp_path, tmp_path.parent / "msaccucmp")
    assert np.array_equal(theirs.outputs["input"][0], image)


def test_several_dumps_of_one_op_leave_the_last_as_msaccucmp_takes_it(tmp_path: Path) -> None:
    for offset, value in ((2, 2.0), (0, 0.0), (1, 1.0)):
        _write(tmp_path, f"Add.add.{offset}.2.{TS + offset}", "add", [DumpTensorSpec(np.full(2, value, np.float32),
                                                                                     "ND")])
    ours = _infer(tmp_path)["add"]
    assert ours.dump.outputs[0].array()[0] == 2.0 and "3 dumps of the op in one execution" in ours.note
    assert _msaccucmp(tmp_path, tmp_path.parent / "msaccucmp").outputs["add"][0][0] == 2.0


@pytest.mark.parametrize("name", [
    f"Add.a.1.{TS}",                      # {task}.{timestamp}
    f"Add.a.1.2.{TS}",                    # {task}.{stream}.{timestamp}
    "Add.a.1.2.170000000000000",          # a timestamp of 15 digits
    "Add.a.1.2.1700000000000",            # 13 (milliseconds)
    f"Add.a.1.{TS}.4.7.0.0",              # FFTS+, no stream id
    f"Add.a.2.1.{TS}.0.0.0.0",            # {stream}.{task}.{timestamp}.{task_type}.{context}.{thread}.{device}
    f"Add.a.1.{TS}.0",                    # a device id alone after the timestamp
])
def test_every_name_form_msaccucmp_reads_is_read(name: str, tmp_path: Path) -> None:
    parsed = parse_dump_file_name(name)
    assert parsed is not None and parsed.op_name == "a"
    assert str(parsed.timestamp) in name.split(".")[3:5]
    _write(tmp_path, name, "a", [DumpTensorSpec(np.zeros(2, np.float32), "ND")])
    theirs = _msaccucmp(tmp_path, tmp_path.parent / "msaccucmp")
    assert theirs.error is None and set(theirs.ops) == {"a"}


@pytest.mark.parametrize("name", [f"Add.a.1.2.{TS}.0.3.4", f"Add.a.1.{TS}.0.3.4"])
def test_departure_three_trailing_fields_are_read_where_msaccucmp_stops(name: str, tmp_path: Path) -> None:
    # OFFLINE_DUMP_PATTERN admits (task_type, context_id, thread_id) without the device id, but msaccucmp's
    # _check_task_type then reads the fourth field from the end, the timestamp here, as the task type and stops
    # the whole folder (MSACCUCMP_INVALID_TASK_TYPE, 37). infer reads the three as the task fields.
    parsed = parse_dump_file_name(name)
    assert parsed is not None and parsed.timestamp == TS and parsed.extra == (0, 3, 4) and parsed.task_type == 0
    _write(tmp_path, name, "a", [DumpTensorSpec(np.zeros(2, np.float32), "ND")])
    assert _msaccucmp(tmp_path, tmp_path.parent / "msaccucmp").error == 37


def test_departure_a_name_with_more_after_its_numbers_is_not_a_dump(tmp_path: Path) -> None:
    # msaccucmp's pattern is matched at the name's start only: `Add.a.1.2.txt` passes as a dump there; infer wants
    # every field after the op name to be digits (a converted .npy or a note beside the dumps is not read as one)
    assert parse_dump_file_name("Add.a.1.2.txt") is None
    _write(tmp_path, "Add.a.1.2.txt", "a", [DumpTensorSpec(np.zeros(2, np.float32), "ND")])
    assert set(_msaccucmp(tmp_path, tmp_path.parent / "msaccucmp").ops) == {"a"}


def test_a_slicing_attr_nested_past_any_depth_is_no_slicing_not_a_traceback(tmp_path: Path) -> None:
    # The attr is the device's file's to say: JSON nested 100,000 deep made json.loads raise RecursionError
    deep = "[" * 100_000 + "]" * 100_000
    for thread in range(2):
        _write(tmp_path, f"Add.add.5.1.{TS + thread}.4.7.{thread}.0", "add",
               [DumpTensorSpec(np.full((2, 2), thread, np.float32), "ND")], attrs=(("_sgt_json_info", deep),))
    ours = _infer(tmp_path)["add"]
    assert np.array_equal(ours.dump.outputs[0].array(), np.ones((2, 2), np.float32))
