"""The om wiring on the real files of Ascend/ModelZoo-TensorFlow (commit a2c3332a6cea24b56ab936a746b994c89c8fc7f8,
ACL_TensorFlow/contrib/cv/): the AutoEncoder's hh_om.om (ATC 1.80, Ascend310), its hh.pb, its input
scripts/input_bins/hh.bin and the NPU output scripts/results/VAE/hh_output0.bin that the repository's ACL benchmark
wrote, go through inspect, freeze, convert --use-om, dump-bin and compare; DD-NET's out.om (the older header)
inspects. Not committed: they are read from the folder INFER_ASCEND_FIXTURES names (see
tests/atc_wrap/test_ascend_real_files.py for the file names), and these tests skip without it."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from infer.contract import load_contract
from tests.cli import run_cli

FIXTURES = Path(os.environ["INFER_ASCEND_FIXTURES"]) if os.environ.get("INFER_ASCEND_FIXTURES") else None
pytestmark = pytest.mark.skipif(FIXTURES is None or not (FIXTURES / "hh_om.om").is_file(),
                                reason="INFER_ASCEND_FIXTURES does not name a folder with the real om files")


def _fixture(name: str) -> Path:
    assert FIXTURES is not None
    return FIXTURES / name


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
