"""`infer convert` to the ONNX stand-in from the command line, and the contract problems every target refuses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from atc_wrap.standin.opset import default_opset
from infer.contract import ModelContract, load_contract
from tests.builders.frozen import write_frozen
from tests.builders.graphs import build_unconvertible
from tests.cli import run_cli
from tests.conftest import Copy


def test_without_atc_the_default_target_is_the_stand_in(
    capsys: pytest.CaptureFixture[str], no_atc: None, frozen_small_cnn: ModelContract, copy_model: Copy
) -> None:
    contract = copy_model(frozen_small_cnn)
    outcome = run_cli(capsys, "convert", contract.folder, "--soc-version", "Ascend310", "--op-select-implmode",
                      "high_precision")
    assert outcome.code == 0, outcome.err
    assert "ATC not found: converting to the ONNX Runtime stand-in (--target om to insist)" in outcome.err
    assert "ignored for target onnx: --op-select-implmode" in outcome.err  # the chip chooses the stand-in's table
    assert "precision plan: force_fp16 on Ascend310, operator table of 2022-06-29" in outcome.err
    onnx_path = contract.folder / "model.onnx"
    lines = outcome.out.splitlines()
    assert lines[0].startswith(f"wrote {onnx_path} (onnx, force_fp16, sha256 ")
    assert lines[1] == "inputs/outputs: images:0 float32, probs:0 float32"
    assert lines[2] == f"updated {contract.path}"
    saved = load_contract(contract.path)
    assert saved.converted is not None
    assert saved.converted.settings["opset"] == default_opset()
    assert saved.converted.settings["ignored_options"] == ["--op-select-implmode"]
    assert saved.converted.settings["emulation"]["mode"] == "force_fp16"
    assert saved.converted.soc_version == "Ascend310"
    plan = saved.converted.plan()
    assert plan is not None and (plan.chip, plan.chip_assumed) == ("Ascend310", False)


def test_opset_is_configurable_and_checked(
    capsys: pytest.CaptureFixture[str], frozen_small_cnn: ModelContract, copy_model: Copy, tmp_path: Path
) -> None:
    import onnx

    contract = copy_model(frozen_small_cnn)
    outcome = run_cli(capsys, "convert", contract.path, "--target", "onnx", "--opset", "13", "-o",
                      contract.folder / "m13")
    assert outcome.code == 0, outcome.err
    model = onnx.load(str(contract.folder / "m13.onnx"))
    assert {o.domain: o.version for o in model.opset_import}[""] == 13
    outcome = run_cli(capsys, "convert", contract.path, "--target", "onnx", "--opset", "99")
    assert outcome.code == 2
    assert outcome.error_line == (f"error: --opset 99: expected 9..{default_opset()} (the highest both tf2onnx and "
                                  "the installed onnxruntime handle)")


def test_onnx_dry_run_writes_nothing(
    capsys: pytest.CaptureFixture[str], frozen_small_cnn: ModelContract, copy_model: Copy
) -> None:
    contract = copy_model(frozen_small_cnn)
    before = contract.path.read_bytes()
    outcome = run_cli(capsys, "convert", contract.path, "--target", "onnx", "--dry-run")
    assert outcome.code == 0, outcome.err
    assert outcome.out.strip() == (f"would write {contract.folder / 'model.onnx'} from {contract.pb_path} with "
                                   "tf2onnx, emulating force_fp16")
    assert contract.path.read_bytes() == before
    assert not (contract.folder / "model.onnx").exists()


def test_uint8_output_is_refused_by_the_stand_in_before_converting(
    capsys: pytest.CaptureFixture[str], frozen_small_cnn: ModelContract, copy_model: Copy
) -> None:
    """ATC's quantised UINT8 output has no stand-in: refused up front, in a dry run too, not after tf2onnx ran."""
    contract = copy_model(frozen_small_cnn)
    before = contract.path.read_bytes()
    for extra in ((), ("--dry-run",)):
        outcome = run_cli(capsys, "convert", contract.path, "--target", "onnx", "--output-type", "probs:0:uint8",
                          *extra)
        assert outcome.code == 2
        assert outcome.error_line == ("error: --output-type probs:0:UINT8: the ONNX stand-in emulates FP32 and FP16 "
                                      "outputs only")
        assert "hint: --target om passes it to ATC" in outcome.err
    assert contract.path.read_bytes() == before
    assert not (contract.folder / "model.onnx").exists()


def test_a_tf2onnx_crash_is_one_error_line(
    capsys: pytest.CaptureFixture[str], frozen_small_cnn: ModelContract, copy_model: Copy,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import tf2onnx

    def crash(*args: object, **kwargs: object) -> None:
        raise KeyError("Conv2D__6")

    monkeypatch.setattr(tf2onnx.convert, "from_graph_def", crash)
    contract = copy_model(frozen_small_cnn)
    outcome = run_cli(capsys, "convert", contract.path, "--target", "onnx")
    assert outcome.code == 2
    assert outcome.error_line == (f"error: {contract.pb_path}: tf2onnx {tf2onnx.__version__} failed on this graph "
                                  "(KeyError: 'Conv2D__6')")
    assert "Traceback" not in outcome.err
    assert not (contract.folder / "model.onnx").exists()


def test_missing_contract(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    outcome = run_cli(capsys, "convert", tmp_path / "model.json", "--target", "onnx")
    assert outcome.code == 2
    assert outcome.error_line == f"error: {tmp_path / 'model.json'}: no such model contract"


def test_stale_contract_is_refused(
    capsys: pytest.CaptureFixture[str], frozen_small_cnn: ModelContract, copy_model: Copy
) -> None:
    contract = copy_model(frozen_small_cnn)
    contract.pb_path.write_bytes(contract.pb_path.read_bytes() + b"\n")
    for target in ("onnx", "om"):
        outcome = run_cli(capsys, "convert", contract.path, "--target", target, "--soc-version", "Ascend310")
        assert outcome.code == 2
        assert outcome.error_line == (f"error: {contract.path}: model.pb changed since freeze (sha256 differs from "
                                      "the contract's)")
    assert load_contract(contract.path).converted is None


def test_unconvertible_ops_are_listed_in_one_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    contract = write_frozen(tmp_path / "special", build_unconvertible, ("x:0",), ("out:0",))
    outcome = run_cli(capsys, "convert", contract.path, "--target", "onnx")
    assert outcome.code == 2
    assert outcome.error_line == (f"error: {contract.pb_path}: tf2onnx cannot convert these ops to ONNX opset "
                                  f"{default_opset()}: Igamma (Igamma); Lgamma (Lgamma); Zeta (Zeta)")
    assert "hint: the ONNX stand-in cannot run this graph; ATC may still convert it to om" in outcome.err
    assert not (contract.folder / "model.onnx").exists()
    assert json.loads(contract.path.read_text())["converted"] is None
