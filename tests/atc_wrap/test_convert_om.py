"""`infer convert --target om` against fake ATCs: the exact argv, success judged by output, failures explained."""

from __future__ import annotations

from pathlib import Path

import pytest

from binio.binfile import sha256_file
from binio.process import quote_command
from infer.contract import ModelContract, load_contract
from tests.atc_wrap.conftest import FakeAtc
from tests.cli import run_cli
from tests.conftest import Copy


def base_argv(atc: Path | str, contract: ModelContract, soc: str = "Ascend310P3") -> list[str]:
    return [str(atc), f"--model={contract.pb_path}", "--framework=3", f"--output={contract.folder / 'model'}",
            f"--soc_version={soc}", "--input_shape=images:2,8,8,3", "--input_format=NHWC", "--out_nodes=probs:0",
            "--precision_mode=force_fp16"]


def test_atc_success_records_the_om_and_the_exact_command(
    capsys: pytest.CaptureFixture[str], fake_atc: FakeAtc, frozen_small_cnn: ModelContract, copy_model: Copy
) -> None:
    contract = copy_model(frozen_small_cnn)
    outcome = run_cli(capsys, "convert", contract.path, "--soc-version", "Ascend310P3")
    assert outcome.code == 0, outcome.err
    assert f"ATC found at {fake_atc.path}: converting to om" in outcome.err  # the default target, said plainly
    expected = base_argv(fake_atc.path, contract)
    assert fake_atc.argv() == expected
    om = contract.folder / "model.om"
    assert om.read_bytes() == b"fake om for Ascend310P3"
    saved = load_contract(contract.path)
    assert saved.converted is not None
    assert (saved.converted.target, saved.converted.path, saved.converted.sha256) == ("om", "model.om",
                                                                                     sha256_file(om))
    assert list(saved.converted.command) == expected
    assert (saved.converted.soc_version, saved.converted.precision_mode) == ("Ascend310P3", "force_fp16")
    assert [s.dtype for s in saved.converted.inputs + saved.converted.outputs] == ["float32", "float32"]
    assert saved.converted.settings["warnings"][0].startswith("W11001: Op [conv/Conv2D]")
    assert f"wrote {om} (om, force_fp16, sha256 {sha256_file(om)[:12]})" in outcome.out


@pytest.mark.slow
def test_lists_options_and_dtypes_in_atc_syntax(
    capsys: pytest.CaptureFixture[str], fake_atc: FakeAtc, two_in_two_out: ModelContract, copy_model: Copy,
    tmp_path: Path,
) -> None:
    contract = copy_model(two_in_two_out)
    switch = tmp_path / "fusion switch.cfg"
    switch.write_text("{}")
    outcome = run_cli(capsys, "convert", contract.path, "--target", "om", "--soc-version", "Ascend910B3",
                      "--precision-mode", "allow_mix_precision", "--input-fp16-nodes", "a;b",
                      "--output-type", "parts:1:fp16", "--op-select-implmode", "high_precision",
                      "--fusion-switch-file", switch, "--atc-arg=--log=info", "--atc-arg=--host_env_os=linux",
                      "-o", contract.folder / "out" / "net.om")
    assert outcome.code == 0, outcome.err
    assert fake_atc.argv() == [
        str(fake_atc.path), f"--model={contract.pb_path}", "--framework=3",
        f"--output={contract.folder / 'out' / 'net'}",
        "--soc_version=Ascend910B3", "--input_shape=a:2,4;b:2,3", "--input_format=ND",
        "--out_nodes=head:0;parts:1", "--precision_mode=allow_mix_precision", "--input_fp16_nodes=a;b",
        "--output_type=parts:1:FP16", "--op_select_implmode=high_precision", f"--fusion_switch_file={switch}",
        "--log=info", "--host_env_os=linux",
    ]
    saved = load_contract(contract.path)
    assert saved.converted is not None
    assert saved.converted.path == "out/net.om"
    assert [(s.name, s.dtype) for s in saved.converted.inputs] == [("a:0", "float16"), ("b:0", "float16")]
    assert [(s.name, s.dtype) for s in saved.converted.outputs] == [("head:0", "float32"), ("parts:1", "float16")]


def test_dry_run_prints_the_shell_quoted_command_and_changes_nothing(
    capsys: pytest.CaptureFixture[str], no_atc: None, two_in_two_out: ModelContract, copy_model: Copy
) -> None:
    contract = copy_model(two_in_two_out)
    before = contract.path.read_bytes()
    outcome = run_cli(capsys, "convert", contract.path, "--target", "om", "--soc-version", "Ascend310",
                      "--output-type", "FP16", "--dry-run")
    assert outcome.code == 0, outcome.err
    assert outcome.out.splitlines() == [
        f"atc --model={contract.pb_path} --framework=3 --output={contract.folder / 'model'} --soc_version=Ascend310 "
        "'--input_shape=a:2,4;b:2,3' --input_format=ND '--out_nodes=head:0;parts:1' --precision_mode=force_fp16 "
        "--output_type=FP16"
    ]
    assert "dry run: nothing written" in outcome.err
    assert contract.path.read_bytes() == before
    assert sorted(p.name for p in contract.folder.iterdir()) == ["model.json", "model.pb"]


@pytest.mark.slow
def test_dynamic_batch_sends_minus_one_dims(
    capsys: pytest.CaptureFixture[str], fake_atc: FakeAtc, unknown_batch: ModelContract, copy_model: Copy
) -> None:
    contract = copy_model(unknown_batch)
    outcome = run_cli(capsys, "convert", contract.path, "--soc-version", "Ascend310", "--dynamic-batch", "1,2,4,8")
    assert outcome.code == 0, outcome.err
    argv = fake_atc.argv()
    assert "--input_shape=x:-1,4" in argv
    assert argv[-1] == "--dynamic_batch_size=1,2,4,8"
    saved = load_contract(contract.path)
    assert saved.converted is not None and saved.converted.inputs[0].shape == (None, 4)


def test_unknown_batch_without_a_dynamic_option_is_refused(
    capsys: pytest.CaptureFixture[str], fake_atc: FakeAtc, unknown_batch: ModelContract
) -> None:
    outcome = run_cli(capsys, "convert", unknown_batch.path, "--soc-version", "Ascend310")
    assert outcome.code == 2
    assert outcome.error_line == ("error: input x:0: shape (?,4) has unknown dims; ATC needs static shapes or a "
                                  "dynamic option")
    assert not fake_atc.record.exists()


def test_dynamic_batch_on_a_pinned_batch_is_refused_like_e10031(
    capsys: pytest.CaptureFixture[str], fake_atc: FakeAtc, frozen_small_cnn: ModelContract
) -> None:
    outcome = run_cli(capsys, "convert", frozen_small_cnn.path, "--soc-version", "Ascend310",
                      "--dynamic-batch", "1,2,4")
    assert outcome.code == 2
    assert outcome.error_line == ("error: --dynamic-batch 1,2,4: every input's shape is static (images:0 "
                                  "(2,8,8,3)); ATC would fail with E10031 (a dynamic option needs a -1 dim in "
                                  "--input_shape)")
    assert not fake_atc.record.exists()


@pytest.mark.slow
def test_atc_error_code_is_explained_and_no_contract_change(
    capsys: pytest.CaptureFixture[str], fake_atc: FakeAtc, frozen_small_cnn: ModelContract, copy_model: Copy,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    contract = copy_model(frozen_small_cnn)
    before = contract.path.read_bytes()
    monkeypatch.setenv("FAKE_ATC_MODE", "e10016")
    outcome = run_cli(capsys, "convert", contract.path, "--soc-version", "Ascend310")
    assert outcome.code == 2
    assert outcome.error_line == (
        "error: atc failed (exit 255): E10016: Opname [probs] specified in [--out_nodes] is not found in the model, "
        "confirm whether this node name exists, or node is not split with the specified delimiter ';'"
    )
    assert "hint: E10016: a node named in --input_shape or --out_nodes is not in the pb" in outcome.err
    assert contract.path.read_bytes() == before
    assert not (contract.folder / "model.om").exists()


@pytest.mark.slow
def test_exit_zero_without_the_success_line_is_a_failure(
    capsys: pytest.CaptureFixture[str], fake_atc: FakeAtc, frozen_small_cnn: ModelContract, copy_model: Copy,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    contract = copy_model(frozen_small_cnn)
    monkeypatch.setenv("FAKE_ATC_MODE", "no_success")
    outcome = run_cli(capsys, "convert", contract.path, "--soc-version", "Ascend310")
    assert outcome.code == 2
    assert outcome.error_line == ("error: atc exited 0 but did not print 'ATC run success': the conversion did "
                                  "not finish")
    assert load_contract(contract.path).converted is None
    assert not (contract.folder / "model.om").exists()  # the truncated om it left is removed


@pytest.mark.slow
def test_a_hung_atc_is_stopped_at_the_timeout(
    capsys: pytest.CaptureFixture[str], fake_atc: FakeAtc, frozen_small_cnn: ModelContract, copy_model: Copy,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    contract = copy_model(frozen_small_cnn)
    monkeypatch.setenv("FAKE_ATC_MODE", "hang")
    outcome = run_cli(capsys, "convert", contract.path, "--soc-version", "Ascend310", "--timeout", "1")
    assert outcome.code == 2
    assert outcome.error_line == ("error: atc: no result after 1 s; stopped it and the processes it started (TERM, "
                                  "then KILL after 5 s). Last output:")
    assert "ATC start working now, please wait for a moment." in outcome.err
    assert load_contract(contract.path).converted is None


def test_atc_not_found_says_so_for_target_om(
    capsys: pytest.CaptureFixture[str], no_atc: None, frozen_small_cnn: ModelContract
) -> None:
    outcome = run_cli(capsys, "convert", frozen_small_cnn.path, "--target", "om", "--soc-version", "Ascend310")
    assert outcome.code == 2
    assert outcome.error_line == ("error: atc: not found on PATH (ASCEND_TOOLKIT_HOME is not set); ATC comes with "
                                  "Ascend's CANN toolkit")
    assert "--target onnx converts to the ONNX Runtime stand-in" in outcome.err


def test_atc_under_ascend_toolkit_home_is_found(
    capsys: pytest.CaptureFixture[str], fake_atc: FakeAtc, frozen_small_cnn: ModelContract, copy_model: Copy,
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tests.atc_wrap.conftest import FAKES, path_without_atc

    home = tmp_path / "ascend-toolkit" / "latest"
    (home / "compiler" / "bin").mkdir(parents=True)
    (home / "compiler" / "bin" / "atc").symlink_to(FAKES / "atc")
    monkeypatch.setenv("PATH", path_without_atc())
    monkeypatch.setenv("ASCEND_TOOLKIT_HOME", str(home))
    contract = copy_model(frozen_small_cnn)
    outcome = run_cli(capsys, "convert", contract.path, "--soc-version", "Ascend310")
    assert outcome.code == 0, outcome.err
    assert fake_atc.argv()[0] == str(home / "compiler" / "bin" / "atc")


def test_unknown_soc_version_is_refused_with_a_suggestion(
    capsys: pytest.CaptureFixture[str], fake_atc: FakeAtc, frozen_small_cnn: ModelContract
) -> None:
    from atc_wrap.atc.soc import KNOWN_SOC_VERSIONS

    outcome = run_cli(capsys, "convert", frozen_small_cnn.path, "--soc-version", "Ascend310p3")
    assert outcome.code == 2
    assert outcome.error_line == (f"error: --soc-version 'Ascend310p3': not a chip ATC knows (did you mean "
                                  f"Ascend310P3?); known: {', '.join(KNOWN_SOC_VERSIONS)}")
    assert "hint: for a chip newer than this list, add --allow-unknown-soc" in outcome.err
    assert not fake_atc.record.exists()


def test_allow_unknown_soc_passes_a_new_chip_through(
    capsys: pytest.CaptureFixture[str], fake_atc: FakeAtc, frozen_small_cnn: ModelContract
) -> None:
    outcome = run_cli(capsys, "convert", frozen_small_cnn.path, "--soc-version", "Ascend950X", "--allow-unknown-soc",
                      "--dry-run")
    assert outcome.code == 0, outcome.err
    assert outcome.out.strip() == quote_command(base_argv(fake_atc.path, frozen_small_cnn, "Ascend950X"))


@pytest.mark.parametrize(("option", "value", "line"), [
    ("--precision-mode", "fp16", "error: --precision-mode 'fp16': expected one of force_fp16, force_fp32, "
     "allow_fp32_to_fp16, must_keep_origin_dtype, allow_mix_precision"),
    ("--op-select-implmode", "fast", "error: --op-select-implmode 'fast': expected one of high_precision, "
     "high_performance, high_precision_for_all, high_performance_for_all"),
    ("--input-format", "HWC", "error: --input-format 'HWC': expected one of NHWC, NCHW, ND"),
    ("--input-fp16-nodes", "labels", "error: --input-fp16-nodes 'labels': not an input of the model; inputs are: "
     "images"),
    ("--output-type", "probs:0:FP64", "error: --output-type 'probs:0:FP64': type 'FP64' is not one of FP32, FP16, "
     "UINT8"),
    ("--output-type", "logits:0:FP16", "error: --output-type 'logits:0:FP16': logits:0 is not an output of the "
     "model; outputs are: probs:0"),
    ("--dynamic-batch", "1,x", "error: --dynamic-batch '1,x': expected whole numbers from 1 to 2147483647, found 'x'"),
    ("--target", "tflite", "error: --target 'tflite': expected one of om, onnx"),
])
def test_bad_options_are_refused_before_atc_runs(
    capsys: pytest.CaptureFixture[str], fake_atc: FakeAtc, frozen_small_cnn: ModelContract, option: str, value: str,
    line: str,
) -> None:
    outcome = run_cli(capsys, "convert", frozen_small_cnn.path, "--soc-version", "Ascend310", option, value)
    assert outcome.code == 2
    assert outcome.error_line == line
    assert not fake_atc.record.exists()


def test_node_missing_from_the_pb_is_caught_before_atc(
    capsys: pytest.CaptureFixture[str], fake_atc: FakeAtc, frozen_small_cnn: ModelContract, copy_model: Copy
) -> None:
    import json

    contract = copy_model(frozen_small_cnn)
    document = json.loads(contract.path.read_text())
    document["outputs"][0]["tensor"] = "head/probs:0"
    contract.path.write_text(json.dumps(document))
    outcome = run_cli(capsys, "convert", contract.path, "--soc-version", "Ascend310")
    assert outcome.code == 2
    assert outcome.error_line.startswith(f"error: {contract.pb_path.absolute()}: no node for head/probs:0 in the "
                                         "graph (")
    assert not fake_atc.record.exists()
