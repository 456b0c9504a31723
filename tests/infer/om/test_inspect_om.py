"""`infer inspect MODEL.om [--json]` on oms of both header versions written by the independent writer: header,
inputs and outputs as the om stores them, AIPP, gears, the output nodes ATC was given, op counts and the fusion map;
an encrypted, truncated or non-om file refused in one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from atc_wrap.ascend_files.om_model import read_om
from binio.spec import TensorSpec
from tests.cli import run_cli
from tests.infer.om_files import OmPlan, write_om

IMAGES = TensorSpec("images:0", "float32", (None, 8, 8, 3), "NHWC")
PROBS = TensorSpec("probs:0", "float32", (None, 5))
FUSED = {"conv/Conv2D": ["conv/BiasAdd", "conv/Conv2D", "conv/relu"]}


def _plan(**changes: Any) -> OmPlan:
    base: dict[str, Any] = {"input_dtypes": {"images:0": "float16"}, "fused": FUSED, "batch_gears": [1, 4],
                               "aipp": {"images:0": {"aipp_mode": 1, "input_format": 3}}}
    return OmPlan([IMAGES], [PROBS], **(base | changes))


@pytest.mark.parametrize(("version", "header"), [(0x20000000, "header 0x20000000 (model_num 1)"),
                                                 (0x10000000, "header 0x10000000 (the first version: no model_num)")])
def test_both_header_versions_inspect(tmp_path: Path, capsys: pytest.CaptureFixture[str], version: int,
                                      header: str) -> None:
    om = write_om(tmp_path / "net.om", _plan(version=version))
    outcome = run_cli(capsys, "inspect", om)
    assert outcome.code == 0, outcome.err
    lines = outcome.out.splitlines()
    assert lines[0] == (f"{om}: om, {header}, not encrypted, om IR version 2, platform 1.11.z.0 (type 1), model net")
    assert lines[1] == "ATC 1.80.T15.0.B156 for Ascend310 (framework TensorFlow, target MINI, opp 1.80.T15.0.B156)"
    assert lines[2].startswith("ATC command: /usr/local/Ascend/")
    assert lines[3].startswith("partitions: MODEL_DEF ")
    rows = [line.split() for line in lines]  # a pipe gets plain columns, no box-drawing lines
    assert any(row[1:5] == ["images", "float16", "(?,8,8,3)", "NHWC"] for row in rows if len(row) > 4)
    assert any(row[1:4] == ["probs:0", "float32", "(?,5)"] for row in rows if len(row) > 3)
    assert not any(char in outcome.out for char in "│┃─━")
    assert "output nodes ATC was given (--out_nodes): probs:0" in lines
    assert "AIPP on images: aipp_mode=1, input_format=3" in lines
    assert "dynamic gears (batch, on ascend_mbatch_shape_case): 1; 4" in lines
    assert any(line.startswith("conv/Conv2D ") and "conv/BiasAdd, conv/Conv2D, conv/relu" in line
               and "conv/relu:0" in line for line in lines)


def test_json_is_the_readers_whole_account(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    om = write_om(tmp_path / "net.om", _plan())
    outcome = run_cli(capsys, "inspect", om, "--json")
    document = json.loads(outcome.out)
    assert document == json.loads(json.dumps(read_om(om).to_json()))
    assert (document["soc_version"], document["out_node_names"], document["header"]["is_encrypted"]) == \
        ("Ascend310", ["probs:0"], False)
    assert [(e["op_name"], e["original_op_names"]) for e in document["fusion_map"]] == \
        [("conv/Conv2D", ["conv/BiasAdd", "conv/Conv2D", "conv/relu"])]
    assert document["op_counts"] == {"Cast": 1, "Case": 1, "Conv2D": 1, "Data": 1, "NetOutput": 1}


def test_a_static_om_says_it_has_no_gears_and_no_aipp(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    om = write_om(tmp_path / "net.om", _plan(batch_gears=[], aipp={}, fused={}))
    lines = run_cli(capsys, "inspect", om).out.splitlines()
    assert {"AIPP: none", "dynamic gears: none (static shapes)",
            "fusion map: no op names the TF nodes it came from"} <= set(lines)


def test_an_om_by_its_magic_whatever_its_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    om = write_om(tmp_path / "net.om", _plan())
    renamed = om.rename(tmp_path / "model.bin")
    assert run_cli(capsys, "inspect", renamed).out.startswith(f"{renamed}: om, header 0x20000000")


def test_encrypted_truncated_and_foreign_files_are_refused_in_one_line(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    sealed = write_om(tmp_path / "sealed.om", _plan(encrypted=True))
    assert run_cli(capsys, "inspect", sealed).error_line == (
        f"error: {sealed}: the om is encrypted (is_encrypt = 1 in its header): expected a plain om; an encrypted "
        "model can only be loaded by CANN with its key")
    whole = write_om(tmp_path / "net.om", _plan()).read_bytes()
    head = tmp_path / "head.om"
    head.write_bytes(whole[:100])
    assert run_cli(capsys, "inspect", head).error_line == (
        f"error: {head}: truncated om: expected its 256-byte header, the file has 100 bytes")
    foreign = tmp_path / "weights.om"
    foreign.write_bytes(b"PK\x03\x04 a zip file")
    outcome = run_cli(capsys, "inspect", foreign)
    assert outcome.code == 2 and "Traceback" not in outcome.err
    assert outcome.error_line == (f"error: {foreign}: not an om file: expected the magic b'IMOD' (0x444F4D49) at "
                                  "byte 0, found b'PK\\x03\\x04' (0x04034B50)")
