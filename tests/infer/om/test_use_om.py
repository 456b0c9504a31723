"""`infer convert --use-om`: an om built elsewhere recorded in model.json once it matches the frozen pb, with the om's
own dtypes; copied into the model folder when outside it; refused in one line otherwise, model.json untouched."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from binio.binfile import sha256_file
from infer.contract import ModelContract, load_contract
from infer.convert import ConvertOptions
from tests.cli import run_cli
from tests.conftest import Copy
from tests.infer.om_files import OmPlan, write_om


def _plan(contract: ModelContract, **changes: Any) -> OmPlan:
    return OmPlan(list(contract.inputs), list(contract.outputs), **changes)


def test_an_om_outside_the_folder_is_checked_copied_and_recorded_with_its_own_dtypes(
        frozen_small_cnn: ModelContract, copy_model: Copy, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    contract = copy_model(frozen_small_cnn)
    plan = _plan(contract, input_dtypes={"images:0": "float16"},
                 cmdline="atc --model=m.pb --precision_mode=allow_mix_precision")
    om = write_om(tmp_path / "server" / "cnn.om", plan)
    outcome = run_cli(capsys, "convert", contract.path, "--use-om", om)
    assert outcome.code == 0, outcome.err
    copy = contract.folder / "cnn.om"
    assert copy.read_bytes() == om.read_bytes()
    assert f"copied {om} into the model folder as {copy}" in outcome.err
    assert "input images: the om takes float16 where the pb takes float32" in outcome.err
    assert outcome.out.splitlines()[0].startswith(f"recorded {copy} (--use-om: cnn.om, an om for Ascend310 (its "
                                                  "soc_version), built by ATC 1.80.T15.0.B156; allow_mix_precision")
    converted = load_contract(contract.path).converted
    assert converted is not None
    assert (converted.target, converted.path, converted.sha256, converted.soc_version, converted.precision_mode) == \
        ("om", "cnn.om", sha256_file(om), "Ascend310", "allow_mix_precision")
    assert [(s.name, s.dtype, s.shape) for s in converted.inputs] == [("images:0", "float16", (2, 8, 8, 3))]
    assert [(s.name, s.dtype) for s in converted.outputs] == [("probs:0", "float32")]
    assert converted.settings["converter"] == "use-om"
    assert converted.settings["input_fp16_nodes"] == "images"  # what the emulation and tune-precision replay
    assert converted.settings["om"]["soc_version"] == "Ascend310"
    assert json.loads(contract.path.read_text())["version"] == 1


def test_an_om_inside_the_folder_is_recorded_where_it_is(frozen_small_cnn: ModelContract, copy_model: Copy,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    contract = copy_model(frozen_small_cnn)
    om = write_om(contract.folder / "built" / "cnn.om", _plan(contract))
    outcome = run_cli(capsys, "convert", contract.path, "--use-om", om)
    assert outcome.code == 0, outcome.err
    assert "copied" not in outcome.err
    converted = load_contract(contract.path).converted
    assert converted is not None and converted.path == "built/cnn.om"
    assert "precision mode force_fp16: ATC's default: the command line the om records names none" in outcome.err


def test_an_output_dtype_the_pb_does_not_give_is_the_oms_with_why_it_matters(
        frozen_small_cnn: ModelContract, copy_model: Copy, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The om's descriptor decides how msame's output files are read: an om that gives int32 where TensorFlow gives
    # float32 is recorded so, and the note says the comparison will count the lost fractions as error.
    contract = copy_model(frozen_small_cnn)
    om = write_om(tmp_path / "cnn.om", _plan(contract, output_dtypes={"probs:0": "int32"}))
    outcome = run_cli(capsys, "convert", contract.path, "--use-om", om)
    assert outcome.code == 0, outcome.err
    assert ("output probs:0: the om gives int32 where the pb gives float32: the om gives whole numbers where the pb "
            "gives fractions: not harmless, the fractions show as error") in outcome.err
    converted = load_contract(contract.path).converted
    assert converted is not None and [(s.name, s.dtype) for s in converted.outputs] == [("probs:0", "int32")]


@pytest.mark.parametrize(("plan", "expected"), [
    ({"shapes": {"images:0": (4, 8, 8, 3)}}, "input images: the om has shape (4,8,8,3), the frozen pb (2,8,8,3)"),
    ({"input_names": {"images:0": "input"}}, "the om's inputs are input, the frozen pb's images: images not in the "
                                             "om; input not in the pb"),
])
def test_a_mismatch_is_refused_by_name_and_model_json_is_left_alone(
        frozen_small_cnn: ModelContract, copy_model: Copy, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        plan: dict[str, object], expected: str) -> None:
    contract = copy_model(frozen_small_cnn)
    before = contract.path.read_bytes()
    om = write_om(tmp_path / "cnn.om", _plan(contract, **plan))
    outcome = run_cli(capsys, "convert", contract.path, "--use-om", om)
    assert outcome.code == 2
    assert outcome.error_line == f"error: {om}: {expected}"
    assert contract.path.read_bytes() == before
    assert not (contract.folder / "cnn.om").exists()


def test_what_is_not_a_whole_plain_om_is_refused_in_one_line(
        frozen_small_cnn: ModelContract, copy_model: Copy, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    contract = copy_model(frozen_small_cnn)
    text = tmp_path / "notes.om"
    text.write_text("not a model\n")
    assert run_cli(capsys, "convert", contract.path, "--use-om", text).error_line == (
        f"error: {text}: not an om file: expected the magic b'IMOD' (0x444F4D49) at byte 0, found b'not ' "
        "(0x20746F6E)")
    whole = write_om(tmp_path / "cnn.om", _plan(contract)).read_bytes()
    cut = tmp_path / "cut.om"
    cut.write_bytes(whole[:-10])
    assert run_cli(capsys, "convert", contract.path, "--use-om", cut).error_line == (
        f"error: {cut}: truncated om: its header declares {len(whole) - 256} bytes after the 256-byte header "
        f"({len(whole)} in all), the file has {len(whole) - 10}")
    sealed = write_om(tmp_path / "sealed.om", _plan(contract, encrypted=True))
    assert run_cli(capsys, "convert", contract.path, "--use-om", sealed).error_line == (
        f"error: {sealed}: the om is encrypted (is_encrypt = 1 in its header): expected a plain om; an encrypted "
        "model can only be loaded by CANN with its key")
    assert load_contract(contract.path).converted is None


def test_an_om_for_another_chip_than_asked_is_refused(frozen_small_cnn: ModelContract, copy_model: Copy,
                                                      tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    contract = copy_model(frozen_small_cnn)
    om = write_om(tmp_path / "cnn.om", _plan(contract))
    outcome = run_cli(capsys, "convert", contract.path, "--use-om", om, "--soc-version", "Ascend910B")
    assert outcome.error_line == (f"error: --use-om {om}: built for Ascend310 (its soc_version), not for --soc-version "
                                  "Ascend910B")


def test_options_that_shape_a_conversion_are_named_as_ignored_and_a_dry_run_writes_nothing(
        frozen_small_cnn: ModelContract, copy_model: Copy, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    contract = copy_model(frozen_small_cnn)
    om = write_om(tmp_path / "cnn.om", _plan(contract))
    outcome = run_cli(capsys, "convert", contract.path, "--use-om", om, "--output-type", "FP16", "--dry-run")
    assert outcome.code == 0, outcome.err
    assert "ignored for --use-om (the om is built already): --output-type" in outcome.err
    assert outcome.out.startswith(f"would record {contract.folder / 'cnn.om'}: --use-om: cnn.om")
    assert not (contract.folder / "cnn.om").exists() and load_contract(contract.path).converted is None


def test_an_older_om_without_a_chip_or_command_line_takes_atcs_default(
        frozen_small_cnn: ModelContract, copy_model: Copy, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    contract = copy_model(frozen_small_cnn)
    om = write_om(tmp_path / "old.om", _plan(contract, version=0x10000000, soc_version="", cmdline="",
                                             atc_version="1.75.22.0.220"))
    outcome = run_cli(capsys, "convert", contract.path, "--use-om", om, "--soc-version", "Ascend310")
    assert outcome.code == 0, outcome.err
    assert "the om names no chip (ATC 1.75.22.0.220 wrote no soc_version); recorded as --soc-version Ascend310" \
        in outcome.err
    assert "precision mode force_fp16: ATC's default, assumed: the om records no ATC command line" in outcome.err
    converted = load_contract(contract.path).converted
    assert converted is not None and converted.soc_version == "Ascend310"
    assert converted.settings["om"]["header_version"] == "0x10000000"


def test_the_pipeline_key_is_relative_to_the_pipeline_file(tmp_path: Path) -> None:
    from infer.pipeline._decode import decode_table

    options = decode_table(ConvertOptions, {"use_om": "oms/model.om"}, tmp_path / "pipeline.toml", "convert")
    assert options.use_om == tmp_path.resolve() / "oms" / "model.om"
