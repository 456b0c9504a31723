"""`infer bin-info DUMPFILE|DUMPDIR [--om MODEL.om] [--to-npy OUT]`: an NPU dump's ops and tensors, their layouts
(NC1HWC0, FRACTAL_NZ, FRACTAL_Z) turned back into TensorFlow's by the om's origin, else the dump's. The om and the
dump files are the test's own writer's (tests/atc_wrap/ascend_writer.py), the layouts its reference's."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.atc_wrap.ascend_samples import CONV, MATMUL, WEIGHT, sample_ops, write_sample_om
from tests.atc_wrap.ascend_writer import GE_FLOAT16, Desc, DumpTensorSpec, dump_bytes
from tests.atc_wrap.npu_layout_reference import hwcn_to_fractal_z, nchw_to_nc1hwc0, nd_to_fractal_nz
from tests.cli import run_cli

RNG = np.random.default_rng(4)
CONV_FILE = "Conv2D.scope_conv_Conv2D.3.2.1700000000000001"
MATMUL_FILE = "MatMulV2.scope_dense_MatMul.5.2.1700000000000002"


def _om(folder: Path) -> Path:
    """The sample om, its conv op given the input descriptors ATC writes (the image's, the FRACTAL_Z weight's)."""
    ops = sample_ops()
    conv = next(op for op in ops if op.name == CONV)
    conv.input_descs = [Desc(GE_FLOAT16, (2, 8, 8, 1), "NHWC", "NHWC", (2, 8, 8, 1)), WEIGHT]
    return write_sample_om(folder, ops=ops)


def _conv_dump(folder: Path, *, with_origin: bool = True) -> tuple[Path, np.ndarray, np.ndarray]:
    """The sample om's conv: its image input (NHWC), its FRACTAL_Z weight, its NC1HWC0 output."""
    image = RNG.standard_normal((2, 8, 8, 1)).astype(np.float16)
    weight = RNG.standard_normal((3, 3, 1, 20)).astype(np.float16)
    out = RNG.standard_normal((2, 4, 4, 20)).astype(np.float16)
    path = folder / CONV_FILE
    path.write_bytes(dump_bytes(CONV, [DumpTensorSpec(image, "NHWC"), DumpTensorSpec(hwcn_to_fractal_z(weight),
                                                                                     "FRACTAL_Z")],
                                [DumpTensorSpec(nchw_to_nc1hwc0(out.transpose(0, 3, 1, 2), 16), "NC1HWC0",
                                                original_name="scope/conv/add",
                                                original_format="NHWC" if with_origin else None,
                                                original_shape=(2, 4, 4, 20) if with_origin else None)]))
    return path, weight, out


def test_a_dump_file_with_the_om_turns_every_layout_back(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    om = _om(tmp_path)
    path, weight, out = _conv_dump(tmp_path, with_origin=False)
    outcome = run_cli(capsys, "bin-info", path, "--om", om, "--json", "--to-npy", tmp_path / "npy")
    assert outcome.code == 0, outcome.err
    report = json.loads(outcome.out)
    [op] = report["dump_ops"]
    assert (op["op_type"], op["op_name"]) == ("Conv2D", CONV)
    assert op["fused_nodes"] == ["scope/conv/add", "scope/conv/Conv2D"]
    image, kernel, output = op["tensors"]
    assert (kernel["format"], kernel["shape"], kernel["origin_format"], kernel["origin_shape"]) == (
        "FRACTAL_Z", [9, 2, 16, 16], "HWCN", [3, 3, 1, 20])
    assert (output["format"], output["origin_format"], output["origin_shape"], output["origin_from"],
            output["original_name"]) == ("NC1HWC0", "NHWC", [2, 4, 4, 20], "om", "scope/conv/add:0")
    assert image["origin_from"] == "om" and image["stats"]["shape"] == [2, 8, 8, 1]
    assert np.array_equal(np.load(tmp_path / "npy" / f"{CONV_FILE}.input.1.npy"), weight)
    assert np.array_equal(np.load(tmp_path / "npy" / f"{CONV_FILE}.output.0.npy"), out)
    assert output["stats"]["max"] == pytest.approx(float(out.max()))


def test_without_the_om_the_dumps_own_origin_is_used_and_the_rest_is_left_as_it_is(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, _, out = _conv_dump(tmp_path)
    outcome = run_cli(capsys, "bin-info", path)
    assert outcome.code == 0, outcome.err
    lines = outcome.out.splitlines()
    assert lines[0] == f"{path}: NPU dump of Conv2D {CONV}"
    assert (f"  {CONV_FILE}: Conv2D {CONV} output 0 = scope/conv/add:0: NC1HWC0 (2,2,4,4,16) -> NHWC (2,4,4,20) "
            f"(the dump's origin)  float16(2,4,4,20)  min {float(out.min()):.6g}  max {float(out.max()):.6g}") \
        in outcome.out
    # the weight's origin is in neither the dump nor an om: shown in its device layout, and said so
    assert (f"  note: {CONV_FILE}: Conv2D {CONV} input 1: FRACTAL_Z (9,2,16,16): left as FRACTAL_Z: neither the om "
            "nor the dump gives its origin format and shape (pass --om MODEL.om)") in lines


def test_a_dump_folder_lists_every_file_and_names_the_one_it_cannot_read(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    om = _om(tmp_path)
    step = tmp_path / "dump" / "20240101120000" / "0" / "sample" / "1" / "0"
    step.mkdir(parents=True)
    _conv_dump(step)
    logits = RNG.standard_normal((2, 10)).astype(np.float16)
    (step / MATMUL_FILE).write_bytes(dump_bytes(MATMUL, [], [DumpTensorSpec(nd_to_fractal_nz(logits), "FRACTAL_NZ",
                                                                            original_name="scope/dense/BiasAdd")]))
    broken = step / "Cast.trans_Cast_2.6.2.1700000000000003"
    broken.write_bytes(b"\x07\x00")
    outcome = run_cli(capsys, "bin-info", tmp_path / "dump", "--om", om, "--json")
    assert outcome.code == 0, outcome.err
    report = json.loads(outcome.out)
    assert [op["op_name"] for op in report["dump_ops"]] == [CONV, MATMUL]
    matmul = report["dump_ops"][1]["tensors"][0]
    assert (matmul["origin_format"], matmul["origin_shape"]) == ("ND", [2, 10])
    assert matmul["stats"]["min"] == pytest.approx(float(logits.min()))
    assert report["notes"] == [f"{broken}: not an NPU dump file: expected an 8-byte header length, the file has 2 "
                               "bytes"]


def test_dump_refusals_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, _, _ = _conv_dump(tmp_path)
    outcome = run_cli(capsys, "bin-info", path, "--dtype", "float32", "--shape", "2,3")
    assert outcome.error_line == f"error: --dtype: {path} is an NPU dump, whose tensors say their own dtype and shape"
    (tmp_path / "file.npy").write_bytes(b"")
    outcome = run_cli(capsys, "bin-info", path, "--to-npy", tmp_path / "file.npy")
    assert outcome.error_line.startswith(f"error: {tmp_path / 'file.npy'}: exists and is not a folder")
    (tmp_path / "x.bin").write_bytes(b"\x00" * 8)
    outcome = run_cli(capsys, "bin-info", tmp_path / "x.bin", "--om", tmp_path / "model.om")
    assert outcome.error_line.startswith(f"error: --om: {tmp_path / 'x.bin'} is not an NPU dump")


def test_an_aipp_input_sized_as_the_image_is_read_and_its_padding_named(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    # GE sizes an AIPP Data's dump by input_origin_size (data_dumper.cc), the image's aligned bytes: more than the
    # shape takes; the first ones are the tensor, as msaccucmp reads them (tests/atc_wrap/test_npu_dump_forms.py)
    image = RNG.integers(0, 255, (1, 4, 4, 3), dtype=np.uint8)
    path = tmp_path / "Data.input.1.2.1700000000000001"
    path.write_bytes(dump_bytes("input", [], [DumpTensorSpec(image, "NHWC", padding=bytes(16))]))
    outcome = run_cli(capsys, "bin-info", path, "--json")
    assert outcome.code == 0, outcome.err
    [op] = json.loads(outcome.out)["dump_ops"]
    [tensor] = op["tensors"]
    assert tensor["note"] == "16 byte(s) past its shape: the first 48 are the tensor, as msaccucmp reads them"
    assert tensor["stats"]["max"] == float(image.max())


def test_a_long_name_written_as_a_number_is_shown_by_its_real_name(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    number = "3" * 32
    (tmp_path / number).write_bytes(dump_bytes("relu", [], [DumpTensorSpec(np.ones(4, np.float32), "ND")]))
    (tmp_path / "mapping.csv").write_text(f"{number},Relu.relu.1.2.1700000000000001\n")
    outcome = run_cli(capsys, "bin-info", tmp_path / number, "--json")
    assert outcome.code == 0, outcome.err
    [op] = json.loads(outcome.out)["dump_ops"]
    assert (op["op_type"], op["op_name"]) == ("Relu", "relu")
