"""The om wiring on the real files of Ascend/ModelZoo-TensorFlow (commit a2c3332a6cea24b56ab936a746b994c89c8fc7f8,
ACL_TensorFlow/contrib/cv/): the AutoEncoder's hh_om.om (ATC 1.80, Ascend310), its hh.pb, its input
scripts/input_bins/hh.bin and the NPU output scripts/results/VAE/hh_output0.bin that the repository's ACL benchmark
wrote, go through inspect, freeze, convert --use-om, dump-bin and compare; DD-NET's out.om (the older header)
inspects. Not committed: scripts/fetch_ascend_fixtures.py fetches them into the folder INFER_ASCEND_FIXTURES names
(tests/real_files.py), and these tests skip without it."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from infer.contract import load_contract
from tests.cli import run_cli
from tests.real_files import real_file


def _fixture(name: str) -> Path:
    return real_file(name)


def test_the_autoencoder_om_inspects(capsys: pytest.CaptureFixture[str]) -> None:
    outcome = run_cli(capsys, "inspect", _fixture("hh_om.om"))
    assert outcome.code == 0, outcome.err
    lines = outcome.out.splitlines()
    assert lines[0] == (f"{_fixture('hh_om.om')}: om, header 0x20000000 (model_num 1), not encrypted, om IR version 2, "
                        "platform 1.11.z.0 (type 1), model hh_om")
    assert lines[1] == "ATC 1.80.T15.0.B156 for Ascend310 (framework TensorFlow, target MINI, opp 1.80.T15.0.B156)"
    assert lines[2].endswith("--soc_version=Ascend310 --input_shape=input:100,784")
    assert "output nodes ATC was given (--out_nodes): generation/output:0" in lines
    rows = [re.split(r"  +", line.strip()) for line in lines]  # plain columns off a terminal: one row a line
    assert ["0", "input", "float32", "(100,784)", "NHWC", "NHWC (100,784)", "input", "313,600"] in rows
    assert ["0", "generation/output:0", "float32", "(100,28,28,1)", "NHWC", "NHWC (100,28,28,1)", "trans_Cast_35",
            "313,600"] in rows
    assert ["recognition/lrelu/Absrecognition/lrelu/mulrecognition/lrelu/mul_1recognition/lrelu/add", "Abs",
            "recognition/lrelu/Abs, recognition/lrelu/mul, recognition/lrelu/mul_1, recognition/lrelu/add",
            "recognition/lrelu/add:0"] in rows


def test_the_older_header_ddnet_om_inspects(capsys: pytest.CaptureFixture[str]) -> None:
    outcome = run_cli(capsys, "inspect", _fixture("ddnet_out.om"))
    assert outcome.code == 0, outcome.err
    lines = outcome.out.splitlines()
    assert lines[0] == (f"{_fixture('ddnet_out.om')}: om, header 0x10000000 (the first version: no model_num), not "
                        "encrypted, om IR version 2, platform 1.11.z.0 (type 1), model out")
    assert lines[1] == "ATC 1.75.22.0.220 (no soc_version recorded: older ATC) (target MINI, opp 1.75.22.0.220)"
    rows = [re.split(r"  +", line.strip()) for line in lines]
    assert any(row[:2] == ["1", "Input_1"] and "(1,32,15,2)" in row for row in rows)
    assert "output nodes ATC was given (--out_nodes): model_1/dense_2/Softmax:0" in lines


def test_the_autoencoder_goes_through_freeze_use_om_dump_bin_and_compare(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copyfile(_fixture("hh.pb"), tmp_path / "hh.pb")
    # the graph draws random numbers (its latent sample): freeze's own check of the frozen graph cannot agree
    freeze = run_cli(capsys, "freeze", tmp_path / "hh.pb", "-o", tmp_path / "model", "--outputs",
                     "generation/output:0", "--no-verify")
    assert freeze.code == 0, freeze.err
    convert = run_cli(capsys, "convert", tmp_path / "model" / "model.json", "--use-om", _fixture("hh_om.om"))
    assert convert.code == 0, convert.err
    contract = load_contract(tmp_path / "model" / "model.json")
    assert contract.converted is not None
    assert (contract.converted.path, contract.converted.soc_version, contract.converted.precision_mode) == \
        ("hh_om.om", "Ascend310", "force_fp16")
    (tmp_path / "src").mkdir()
    shutil.copyfile(_fixture("hh.bin"), tmp_path / "src" / "hh.bin")
    dump = run_cli(capsys, "dump-bin", "-m", contract.path, "-o", tmp_path / "bins", tmp_path / "src")
    assert dump.code == 0, dump.err
    (tmp_path / "results" / "VAE").mkdir(parents=True)  # as the repository's benchmark_tf.sh leaves it
    shutil.copyfile(_fixture("hh_output0.bin"), tmp_path / "results" / "VAE" / "hh_output0.bin")
    compare = run_cli(capsys, "compare", contract.path, "--input", tmp_path / "bins", "--actual",
                      tmp_path / "results", "--no-expected-from-emulation")
    line = compare.verdict
    assert compare.code in (0, 1), compare.err  # the random draws differ: a verdict either way, never a refusal
    assert "| the model draws random numbers: random_normal/RandomStandardNormal (RandomStandardNormal); TensorFlow " \
           "and the converted model draw differently |" in line
    assert f"| actual: ModelZoo benchmark hh_om.om on Ascend310 (from the om) force_fp16 " \
           f"({contract.converted.sha256[:8]}, no run.json) |" in line
    assert "| actual values on the fp16 grid: every value of generation/output:0 equals its float16 rounding" in line


def _a3c_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    shutil.copyfile(_fixture("a3c_pong_model.pb"), tmp_path / "a3c_pong_model.pb")
    freeze = run_cli(capsys, "freeze", tmp_path / "a3c_pong_model.pb", "-o", tmp_path / "model", "--outputs",
                     "out_a:0")
    assert freeze.code == 0, freeze.err
    return tmp_path / "model" / "model.json"


def test_the_a3c_om_that_cast_its_argmax_to_float32_is_read_as_float32_and_compared(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The A3C Pong model's first om (Ascend/modelzoo 7761bb2) ends its int32 ArgMax in ATC's trans_Cast_32: its
    NetOutput descriptor says float32. --use-om records that, saying why it does not change the comparison; the
    device's outputs (here the ArgMax TensorFlow computes, written as float32, as the om writes them) then compare
    exactly against TensorFlow's int32 (ArgMax is exact on any chip: no fp16 to lose the index)."""
    model = _a3c_model(tmp_path, capsys)
    convert = run_cli(capsys, "convert", model, "--use-om", _fixture("a3c_7761bb2.om"))
    assert convert.code == 0, convert.err
    assert ("output out_a:0: the om gives float32 where the pb gives int32: ATC cast it (a Cast op before the om's "
            "output): integers up to 2^24 in magnitude are exact in float32, so class indices and counts compare "
            "exactly") in convert.err
    contract = load_contract(model)
    assert contract.converted is not None
    assert [(s.name, s.dtype) for s in contract.converted.outputs] == [("out_a:0", "float32")]
    rng = np.random.default_rng(0)
    (tmp_path / "src").mkdir()
    frames = [rng.random((1, 42, 42, 1), dtype=np.float32) for _ in range(3)]
    for index, frame in enumerate(frames):
        frame.tofile(tmp_path / "src" / f"frame{index}.bin")
    dump = run_cli(capsys, "dump-bin", "-m", model, "-o", tmp_path / "bins", tmp_path / "src")
    assert dump.code == 0, dump.err
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.import_graph_def(tf.compat.v1.GraphDef.FromString(contract.pb_path.read_bytes()), name="")
    (tmp_path / "results" / "a3c").mkdir(parents=True)
    with tf.compat.v1.Session(graph=graph) as session:
        for index, frame in enumerate(frames):
            action = session.run("out_a:0", {"s:0": frame})
            action.astype(np.float32).tofile(tmp_path / "results" / "a3c" / f"frame{index}_output0.bin")
    compare = run_cli(capsys, "compare", model, "--input", tmp_path / "bins", "--actual", tmp_path / "results",
                      "--no-expected-from-emulation", "--json")
    assert compare.code == 0, compare.err + compare.out
    report = json.loads(compare.out)
    assert report["passed"] is True


def test_the_a3c_om_of_atc_1_75_keeps_the_argmax_int32(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The next day's om of the same pb (Ascend/modelzoo c735fee, ATC 1.75.22.0.220) outputs int32 as the pb: no
    note. Both oms compute the same fused ops (three Conv2D+BiasAdd+Relu, two MatMulV2), read by the same reader
    from two header-0x10000000 files."""
    model = _a3c_model(tmp_path, capsys)
    convert = run_cli(capsys, "convert", model, "--use-om", _fixture("a3c_c735fee.om"))
    assert convert.code == 0, convert.err
    assert "out_a:0: the om gives" not in convert.err
    contract = load_contract(model)
    assert contract.converted is not None
    assert [(s.name, s.dtype) for s in contract.converted.outputs] == [("out_a:0", "int32")]
    inspect = run_cli(capsys, "inspect", _fixture("a3c_c735fee.om"))
    assert inspect.code == 0, inspect.err
    assert "ATC 1.75.22.0.220 (no soc_version recorded: older ATC) (target MINI, opp 1.75.22.0.220)" in inspect.out
    for fused in ("W_0/conv1/Conv2DW_0/conv1/Relu", "W_0/conv3/Conv2DW_0/conv3/Relu", "W_0/actor/ap/MatMul"):
        assert fused in inspect.out
