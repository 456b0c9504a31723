"""`infer convert --aipp` / `--aipp-config`: aipp.cfg beside the model, --insert_op_conf for ATC, the contract."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from atc_wrap.aipp.parse import read_aipp_config
from infer.contract import ModelContract, load_contract
from tests.atc_wrap.conftest import FakeAtc
from tests.cli import Outcome, run_cli
from tests.conftest import Copy


def _convert_with_config(capsys: pytest.CaptureFixture[str], contract: ModelContract, hand: Path,
                         text: str) -> tuple[Path, Outcome]:
    """`infer convert --aipp-config` with `text` written to `hand`."""
    hand.write_text(text)
    return hand, run_cli(capsys, "convert", contract.path, "--soc-version", "Ascend310", "--aipp-config", hand)


@pytest.mark.slow
def test_om_gets_aipp_cfg_and_insert_op_conf(capsys: pytest.CaptureFixture[str], fake_atc: FakeAtc,
                                             frozen_small_cnn: ModelContract, copy_model: Copy) -> None:
    contract = copy_model(frozen_small_cnn)
    outcome = run_cli(capsys, "convert", contract.path, "--soc-version", "Ascend310P3", "--aipp",
                      "--mean", "123.7,116.3,103.5", "--std", "58.4,57.1,57.4", "--color", "BGR",
                      "--aipp-src-size", "10,12")
    assert outcome.code == 0, outcome.err
    cfg = contract.folder / "aipp.cfg"
    assert fake_atc.argv()[-1] == f"--insert_op_conf={cfg}"  # the fake ATC fails when the file is not there
    config = read_aipp_config(cfg)
    assert config.rbuv_swap_switch and config.crop
    assert (config.load_start_pos_w, config.load_start_pos_h, config.crop_size_w, config.crop_size_h) == (1, 2, 8, 8)
    assert config.mean_chn[:3] == (123, 116, 103)
    saved = load_contract(contract.path)
    assert saved.converted is not None
    assert [(s.name, s.dtype, s.shape, s.layout) for s in saved.converted.inputs] == [
        ("images:0", "uint8", (2, 12, 10, 3), "NHWC")]
    record = saved.converted.settings["aipp"]
    assert record["file"] == "aipp.cfg" and record["source"] == "generated"
    assert record["generated_from"] == {"mean": [123.7, 116.3, 103.5], "std": [58.4, 57.1, 57.4], "scale": 1.0,
                                        "color": "BGR"}
    assert record["config"]["rbuv_swap_switch"] is True
    assert any("resize" in line for line in record["not_expressible"])
    assert "the model now takes uint8 images" in outcome.out


def test_dry_run_shows_insert_op_conf_and_writes_nothing(capsys: pytest.CaptureFixture[str], fake_atc: FakeAtc,
                                                         frozen_small_cnn: ModelContract, copy_model: Copy) -> None:
    contract = copy_model(frozen_small_cnn)
    outcome = run_cli(capsys, "convert", contract.path, "--target", "om", "--soc-version", "Ascend310",
                      "--aipp", "--scale", "0.00392156862745098", "--dry-run")
    assert outcome.code == 0, outcome.err
    assert f"--insert_op_conf={contract.folder / 'aipp.cfg'}" in outcome.out
    assert not (contract.folder / "aipp.cfg").exists()
    assert load_contract(contract.path).converted is None


def test_hand_written_config_is_copied_as_written(capsys: pytest.CaptureFixture[str], fake_atc: FakeAtc,
                                                  frozen_small_cnn: ModelContract, copy_model: Copy,
                                                  tmp_path: Path) -> None:
    contract = copy_model(frozen_small_cnn)
    hand, outcome = _convert_with_config(capsys, contract, tmp_path / "mine.cfg", (
        "# ours\naipp_op {\n aipp_mode: static\n input_format: RGB888_U8\n rbuv_swap_switch: true\n"
        " mean_chn_0: 104\n}\n"))
    assert outcome.code == 0, outcome.err
    assert (contract.folder / "aipp.cfg").read_text() == hand.read_text()
    saved = load_contract(contract.path)
    assert saved.converted is not None
    assert saved.converted.settings["aipp"]["source"] == str(hand)
    assert saved.converted.settings["aipp"]["config"]["src_image_size_w"] == 8  # 0 in the file: the model's size


@pytest.mark.parametrize(("args", "message"), [
    (["--mean", "1"], "error: --mean without --aipp"),
    (["--aipp", "--aipp-src-size", "7"], "error: --aipp-src-size 7: expected two whole numbers"),
    (["--aipp", "--aipp-input-format", "ARGB8888_U8"], "error: --aipp-input-format ARGB8888_U8: expected one of"),
    (["--aipp", "--mean", "-5"], "error: channel 0: mean / scale = -5 cannot be expressed in AIPP"),
    (["--aipp", "--aipp-src-size", "16,4"], "error: --aipp-src-size 16,4: smaller than the model input 8x8"),
])
def test_refusals_before_atc_runs(capsys: pytest.CaptureFixture[str], fake_atc: FakeAtc,
                                  frozen_small_cnn: ModelContract, copy_model: Copy, args: list[str],
                                  message: str) -> None:
    contract = copy_model(frozen_small_cnn)
    outcome = run_cli(capsys, "convert", contract.path, "--soc-version", "Ascend310", *args)
    assert outcome.code != 0
    assert outcome.error_line.startswith(message)
    assert not fake_atc.record.exists() and not (contract.folder / "aipp.cfg").exists()


def test_config_for_another_size_is_refused(capsys: pytest.CaptureFixture[str], fake_atc: FakeAtc,
                                            frozen_small_cnn: ModelContract, copy_model: Copy,
                                            tmp_path: Path) -> None:
    contract = copy_model(frozen_small_cnn)
    hand, outcome = _convert_with_config(capsys, contract, tmp_path / "big.cfg", (
        "aipp_op {\n aipp_mode: static\n input_format: RGB888_U8\n src_image_size_w: 224\n"
        " src_image_size_h: 224\n}\n"))
    assert outcome.code != 0
    assert outcome.error_line == (f"error: {hand}: AIPP hands the model 224x224 (w x h, its src_image_size "
                                  "(crop: false)), input images:0 takes 8x8")


@pytest.mark.slow
def test_failed_atc_puts_the_previous_aipp_cfg_back(capsys: pytest.CaptureFixture[str], fake_atc: FakeAtc,
                                                    frozen_small_cnn: ModelContract, copy_model: Copy,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    contract = copy_model(frozen_small_cnn)
    cfg = contract.folder / "aipp.cfg"
    monkeypatch.setenv("FAKE_ATC_MODE", "e10016")
    assert run_cli(capsys, "convert", contract.path, "--soc-version", "Ascend310", "--aipp").code != 0
    assert not cfg.exists()  # ATC read it, failed: nothing of that run is left
    monkeypatch.delenv("FAKE_ATC_MODE")
    assert run_cli(capsys, "convert", contract.path, "--soc-version", "Ascend310", "--aipp").code == 0
    first = cfg.read_text()
    monkeypatch.setenv("FAKE_ATC_MODE", "e10016")
    failed = run_cli(capsys, "convert", contract.path, "--soc-version", "Ascend310", "--aipp", "--color", "BGR")
    assert failed.code != 0
    assert cfg.read_text() == first  # still the config of the om the contract describes


@pytest.mark.slow
def test_emulated_band_of_an_aipp_om_puts_the_same_aipp_in_front(capsys: pytest.CaptureFixture[str],
                                                                 fake_atc: FakeAtc, frozen_small_cnn: ModelContract,
                                                                 copy_model: Copy, tmp_path: Path) -> None:
    """The om takes uint8 bins: the stand-in that emulates its precision must take them through the same AIPP."""
    import numpy as np

    from atc_wrap.aipp.parse import read_aipp_config
    from binio.manifest import load_manifest
    from infer.compare._judge.expected import emulated_run
    from infer.model_aipp.config import model_aipp

    contract = copy_model(frozen_small_cnn)
    assert run_cli(capsys, "convert", contract.path, "--soc-version", "Ascend310", "--aipp", "--color", "BGR",
                   "--scale", "0.0078125", "--mean", "1", "--aipp-src-size", "10,10").code == 0
    np.save(tmp_path / "images.npy", np.random.default_rng(0).integers(0, 256, size=(4, 10, 10, 3), dtype=np.uint8))
    assert run_cli(capsys, "dump-bin", "-m", contract.path, "-o", tmp_path / "bins", tmp_path / "images.npy",
                   "--scale", "0.0078125", "--mean", "1", "--color", "BGR").code == 0
    saved = load_contract(contract.path)
    staged, folder = emulated_run(saved, load_manifest(tmp_path / "bins"), tmp_path / "cache")
    assert staged.converted is not None and staged.converted.target == "onnx"
    assert [(s.dtype, s.shape) for s in staged.converted.inputs] == [("uint8", (2, 10, 10, 3))]
    assert model_aipp(staged) == model_aipp(saved) == read_aipp_config(contract.folder / "aipp.cfg")
    assert sorted(p.name for p in folder.glob("*.bin")) == ["000000_output_0.bin", "000001_output_0.bin"]


def test_pipeline_template_lists_every_aipp_setting_and_they_read_back() -> None:
    """Every [convert] aipp_* key the pipeline reads is in the file `pipeline init`/`demo` write, and uncommented
    with a value it is read as that value."""
    from dataclasses import fields

    from infer._option_fields import setting_of
    from infer.model_aipp import AippOptions
    from infer.pipeline._template import TemplateValues, render_template
    from infer.pipeline.config import config_from_dict

    text = render_template(TemplateValues(source="model.pb", outputs=("out:0",), aipp=True))
    keys = [key for f in fields(AippOptions) if (key := setting_of(f).toml) is not None and key != "aipp_config"]
    assert keys and all(f"# {key} = " in text for key in keys)
    chosen = {"aipp_input_format": '"YUV420SP_U8"', "aipp_src_size": "[36, 34]", "aipp_crop": "[2, 0]",
              "aipp_csc": '"bt709w"'}
    for key in keys:
        text = text.replace(f"# {key} = ", f"{key} = {chosen[key]}  # ", 1)
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib

    config = config_from_dict(tomllib.loads(text), Path("pipeline.toml"))
    aipp = config.convert.aipp
    assert aipp is not None
    assert (aipp.input_format, aipp.src_size, aipp.crop, aipp.csc) == ("YUV420SP_U8", (36, 34), (2, 0), "bt709w")
