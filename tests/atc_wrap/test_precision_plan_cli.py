"""The precision plan and the pre-check through `infer convert` and `infer inspect --precision`: the stand-in's
outputs follow the chip's plan, model.json records it, and what ATC would refuse is refused (or warned of) before
anything runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from infer.contract import ModelContract, load_contract
from tests.atc_wrap.outputs import onnx_outputs, tf_outputs
from tests.builders.frozen import write_frozen
from tests.builders.graphs import build_exp, build_unconvertible
from tests.cli import run_cli

pytestmark = pytest.mark.slow


@pytest.fixture
def exp_model(tmp_path: Path) -> ModelContract:
    return write_frozen(tmp_path / "exp", build_exp, ("x:0",), ("out:0",))


def _x() -> dict[str, np.ndarray]:
    return {"x:0": np.random.default_rng(0).uniform(11.5, 12.5, size=(2, 16)).astype(np.float32)}


def _convert(capsys: pytest.CaptureFixture[str], contract: ModelContract, *flags: str | Path) -> Any:
    return run_cli(capsys, "convert", contract.path, "--target", "onnx", *flags)


def test_same_mode_other_chip_other_plan_and_other_outputs(exp_model: ModelContract, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """Exp has an fp16 AI Core kernel only on Ascend310, fp32 too on Ascend910: force_fp32 overflows on one."""
    import shutil

    expected = tf_outputs(exp_model, _x())[0]
    got = {}
    for chip in ("Ascend310", "Ascend910A"):
        folder = tmp_path / chip
        shutil.copytree(exp_model.folder, folder)
        outcome = _convert(capsys, load_contract(folder / "model.json"), "--precision-mode", "force_fp32",
                           "--soc-version", chip)
        assert outcome.code == 0, outcome.err
        contract = load_contract(folder / "model.json")
        assert contract.converted is not None
        plan = contract.converted.plan()
        assert plan is not None and plan.chip == chip
        got[chip] = (onnx_outputs(contract, _x())[0], {e.node: e.dtype for e in plan.ops}, outcome.err)
    assert got["Ascend310"][1] == {"grown": "float16", "out": "float32"}
    assert got["Ascend910A"][1] == {"grown": "float32", "out": "float32"}
    assert np.isinf(got["Ascend310"][0]).all()
    np.testing.assert_allclose(got["Ascend910A"][0], expected, rtol=1e-5)
    assert ("under force_fp32 on Ascend310, 1 op still runs in fp16: Exp (no fp32 kernel)"
            in got["Ascend310"][2].splitlines())
    assert "still run" not in got["Ascend910A"][2]


def test_an_unknown_chip_is_refused_by_the_stand_in_as_by_atc(exp_model: ModelContract,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """A typo in --soc-version (Ascend999) is caught on the workstation, with the om target's words and suggestion:
    nothing is written, model.json keeps no conversion."""
    from atc_wrap.atc.soc import KNOWN_SOC_VERSIONS

    before = exp_model.path.read_bytes()
    outcome = _convert(capsys, exp_model, "--soc-version", "Ascend999")
    assert outcome.code == 2
    assert outcome.error_line == (f"error: --soc-version 'Ascend999': not a chip ATC knows (did you mean "
                                  f"Ascend910_9392?); known: {', '.join(KNOWN_SOC_VERSIONS)}")
    assert "hint: for a chip newer than this list, add --allow-unknown-soc" in outcome.err
    assert exp_model.path.read_bytes() == before and not list(exp_model.folder.glob("*.onnx"))
    om = run_cli(capsys, "convert", exp_model.path, "--target", "om", "--soc-version", "Ascend999", "--dry-run")
    assert om.error_line == outcome.error_line  # the two targets refuse it alike


@pytest.mark.parametrize(("chip", "flags"), [("Ascend999", ("--allow-unknown-soc",)), ("Ascend910_9391", ())])
def test_a_chip_without_a_table_is_planned_as_the_assumed_one_and_says_why(
        exp_model: ModelContract, capsys: pytest.CaptureFixture[str], chip: str, flags: tuple[str, ...]) -> None:
    """--allow-unknown-soc, the explicit way past, or a chip ATC knows that the 2022 tables do not cover: the plan is
    Ascend310's, and the line says so without claiming no --soc-version was given."""
    outcome = _convert(capsys, exp_model, "--soc-version", chip, *flags)
    assert outcome.code == 0, outcome.err
    lines = outcome.err.splitlines()
    assert f"no operator table for --soc-version {chip}: the stand-in plans for Ascend310 instead" in lines
    assert any(line.startswith(f"precision plan: force_fp16 on Ascend310 (assumed: no operator table for {chip}), ")
               for line in lines), lines
    assert "no --soc-version given" not in outcome.err and "ignored" not in outcome.err
    document = json.loads(exp_model.path.read_text())["converted"]
    assert document["soc_version"] == chip
    plan = document["precision_plan"]
    assert (plan["chip"], plan["chip_assumed"], plan["chip_asked"]) == ("Ascend310", True, chip)


def test_without_a_chip_the_stand_in_says_which_it_assumed(exp_model: ModelContract,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    outcome = _convert(capsys, exp_model)
    assert outcome.code == 0, outcome.err
    assert ("precision plan: force_fp16 on Ascend310 (assumed: no --soc-version given), operator table of "
            "2022-06-29: 2 ops on floats, 2 in fp16, 0 in fp32") in outcome.err.splitlines()
    document = json.loads(exp_model.path.read_text())["converted"]
    assert document["soc_version"] == ""
    plan = document["precision_plan"]
    assert (plan["chip"], plan["chip_assumed"], plan["family"], plan["table"]["date"]) == (
        "Ascend310", True, "ascend310", "2022-06-29")
    assert [(op["node"], op["op_type"], op["ascend_op"], op["engine"], op["dtype"], op["decided_by"])
            for op in plan["ops"]] == [("grown", "Exp", "Exp", "aicore", "float16", "mode"),
                                       ("out", "Mul", "Mul", "aicore", "float16", "mode")]
    assert document["settings"]["emulation"]["planned"] is True


def test_must_keep_origin_dtype_is_refused_naming_the_op(exp_model: ModelContract,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    for target in (("--target", "onnx"), ("--target", "om", "--soc-version", "Ascend310", "--dry-run")):
        outcome = run_cli(capsys, "convert", exp_model.path, *target, "--precision-mode", "must_keep_origin_dtype")
        assert outcome.code == 2
        assert outcome.error_line == (
            "error: must_keep_origin_dtype on Ascend310" + (" (assumed: no --soc-version given)" if "onnx" in target
                                                            else "")
            + ": 1 op ATC cannot build as asked: grown (Exp -> Exp): must_keep_origin_dtype: no fp32 AI Core kernel "
            "and none on AI CPU known to the table: ATC fails")
    assert load_contract(exp_model.path).converted is None
    allowed = _convert(capsys, exp_model, "--precision-mode", "must_keep_origin_dtype", "--allow-unsupported")
    assert allowed.code == 0, allowed.err
    assert any(line.startswith("--allow-unsupported: grown (Exp -> Exp)") for line in allowed.err.splitlines())
    converted = load_contract(exp_model.path)
    np.testing.assert_allclose(onnx_outputs(converted, _x())[0], tf_outputs(converted, _x())[0], rtol=1e-5)


def test_keep_dtype_where_the_chip_has_no_fp32_kernel_is_refused(exp_model: ModelContract, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    keep = tmp_path / "keep.cfg"
    keep.write_text("grown\nout\n")  # the Mul too: an fp16 Mul would read the fp32 exp cast to fp16, inf
    outcome = _convert(capsys, exp_model, "--keep-dtype", keep, "--soc-version", "Ascend310")
    assert outcome.code == 2
    assert outcome.error_line == ("error: force_fp16 on Ascend310: 1 op ATC cannot build as asked: grown (Exp -> Exp): "
                                  "keep_dtype asks for float32, but its AI Core kernel on ascend310 computes float16 "
                                  "only: ATC cannot")
    kept = _convert(capsys, exp_model, "--keep-dtype", keep, "--soc-version", "Ascend910B2")
    assert kept.code == 0, kept.err
    converted = load_contract(exp_model.path)
    assert converted.converted is not None
    assert {e.node: (e.dtype, e.decided_by) for e in converted.converted.plan().ops}["grown"] == (  # type: ignore
        "float32", "keep_dtype")
    assert np.isfinite(onnx_outputs(converted, _x())[0]).all()


def test_the_pre_check_refuses_an_om_with_an_op_atc_cannot_convert(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    contract = write_frozen(tmp_path / "odd", build_unconvertible, ("x:0",), ("out:0",))
    om = run_cli(capsys, "convert", contract.path, "--target", "om", "--soc-version", "Ascend310P3", "--dry-run")
    assert om.code == 2
    assert om.error_line == (f"error: {contract.pb_path}: 1 op ATC cannot convert for Ascend310P3 (operator table "
                             "of 2022-06-29): Lgamma (Lgamma): no mapping in ATC's TF parser (E12011)")
    assert "hint: Lgamma: rewrite it with ops ATC maps" in om.err and "--allow-unsupported" in om.err
    allowed = run_cli(capsys, "convert", contract.path, "--target", "om", "--soc-version", "Ascend310P3", "--dry-run",
                      "--allow-unsupported")
    assert allowed.code == 0, allowed.err
    assert allowed.out.startswith("atc --model=")
    # The stand-in warns instead (tf2onnx, not ATC, decides what it can run), naming the AI CPU ops too.
    standin = run_cli(capsys, "convert", contract.path, "--target", "onnx", "--dry-run")
    assert standin.code == 0, standin.err
    lines = standin.err.splitlines()
    assert ("pre-check: 1 op ATC would not convert by Ascend310's operator table (ascend310, 2022-06-29): Lgamma "
            "(Lgamma): no mapping in ATC's TF parser (E12011)") in lines
    assert ("pre-check: 2 ops would run on AI CPU (slow on the device) by Ascend310's operator table (ascend310, "
            "2022-06-29): Igamma (Igamma), Zeta (Zeta)") in lines


def test_inspect_prints_the_recorded_plan(exp_model: ModelContract, capsys: pytest.CaptureFixture[str]) -> None:
    unconverted = run_cli(capsys, "inspect", exp_model.path, "--precision")
    assert unconverted.code == 2
    assert unconverted.error_line == f"error: {exp_model.path}: not converted, so it has no precision plan"
    assert _convert(capsys, exp_model, "--precision-mode", "allow_fp32_to_fp16").code == 0
    shown = run_cli(capsys, "inspect", exp_model.path, "--precision")
    assert shown.code == 0, shown.err
    lines = shown.out.splitlines()
    assert lines[0].startswith("precision plan: allow_fp32_to_fp16 on Ascend310 (assumed: no --soc-version given)")
    assert lines[1] == "under allow_fp32_to_fp16 on Ascend310 (assumed: no --soc-version given), 1 op still runs in " \
                       "fp16: Exp (no fp32 kernel)"
    row = next(line for line in lines if "grown" in line)
    assert all(cell in row for cell in ("Exp", "aicore", "float16", "table", "no fp32 kernel, lowered to fp16"))
    as_json = json.loads(run_cli(capsys, "inspect", exp_model.path, "--precision", "--json").out)
    assert as_json == json.loads(exp_model.path.read_text())["converted"]["precision_plan"]


def test_a_damaged_plan_is_refused_naming_the_entry(exp_model: ModelContract,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert _convert(capsys, exp_model).code == 0
    document = json.loads(exp_model.path.read_text())
    del document["converted"]["precision_plan"]["ops"][1]["node"]
    exp_model.path.write_text(json.dumps(document))
    outcome = run_cli(capsys, "inspect", exp_model.path, "--precision")
    assert outcome.code == 2
    assert outcome.error_line == (f"error: {exp_model.path}: missing field "
                                  "'converted.precision_plan.ops[1].node'")


def build_resize_sum(tf: Any) -> None:
    """A bilinear resize whose output a black-listed ReduceMean reads (allow_mix_precision keeps it fp32)."""
    x = tf.compat.v1.placeholder(tf.float32, [1, 4, 4, 8], name="x")
    resized = tf.compat.v1.image.resize_bilinear(x, [8, 8], name="resize")
    tf.reduce_mean(resized, axis=3, name="out")


def test_the_stand_in_gives_an_op_its_kernels_output_dtype(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """ResizeBilinearV2D on Ascend310 takes fp16 and gives fp32 (DD-NET's om computes its resizes so): with the
    model's input given fp16, the black ReduceMean reads the resize's fp32 output, not one rounded to fp16. Before
    the plan read output dtypes, the resize stored fp16 and the mean read rounded values."""
    contract = write_frozen(tmp_path / "resize", build_resize_sum, ("x:0",), ("out:0",))
    outcome = _convert(capsys, contract, "--precision-mode", "allow_mix_precision", "--soc-version", "Ascend310",
                       "--input-fp16-nodes", "x")
    assert outcome.code == 0, outcome.err
    converted = load_contract(contract.path)
    plan = converted.converted.plan()  # type: ignore[union-attr]
    assert plan is not None
    assert {e.node: e.dtype for e in plan.ops} == {"resize": "float16->float32", "out": "float32"}
    x = np.random.default_rng(1).normal(size=(1, 4, 4, 8)).astype(np.float32)
    fed = x.astype(np.float16).astype(np.float32)  # the fp16 input the device is given
    kept = tf_outputs(contract, {"x:0": fed})[0]  # the resize's fp32 out, averaged in fp32
    got = onnx_outputs(converted, {"x:0": x})[0]
    np.testing.assert_allclose(got, kept, rtol=0, atol=2e-6)

    import tensorflow as tf

    rounded = tf.reduce_mean(tf.cast(tf.cast(tf.compat.v1.image.resize_bilinear(fed, [8, 8]), tf.float16),
                                     tf.float32), axis=3).numpy()
    assert np.abs(got - rounded).max() > 1e-4  # what an fp16 resize output would have given: told apart
