"""The demo's image model with AIPP, end to end: uint8 bins, the stand-in's AIPP stage, TensorFlow fed the declared
float preprocessing of the same bins; a hand-written config that does not match the training preprocessing fails
and is named."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from binio.binfile import read_bin
from binio.manifest import load_manifest
from infer.contract import load_contract
from infer.demo._run import DemoResult, run_demo
from infer.model_aipp.declared import DeclaredPreprocessing
from tests.cli import Outcome, run_cli

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> DemoResult:
    return run_demo(tmp_path_factory.mktemp("demo_aipp"), aipp=True)


def _run_with_config(capsys: pytest.CaptureFixture[str], demo: DemoResult, config_text: str) -> Outcome:
    """The demo's pipeline with a hand-written AIPP config instead of `aipp = true`; the file is restored after."""
    toml = demo.pipeline_file
    text = toml.read_text()
    (toml.parent / "hand.cfg").write_text(config_text)
    toml.write_text(text.replace("\naipp = true", '\naipp_config = "hand.cfg"'))
    try:
        return run_cli(capsys, "pipeline", "run", str(toml))
    finally:
        toml.write_text(text)
        assert run_cli(capsys, "pipeline", "run", str(toml)).code == 0


def test_aipp_pipeline_passes_with_full_top1_agreement(demo: DemoResult) -> None:
    assert demo.pipeline.passed and demo.pipeline.verdict.startswith("PASSED | golden: tensorflow model.pb (")
    assert "top-1 agreement 100.0%" in demo.pipeline.stages[-1].line()
    contract = load_contract(demo.pipeline.work_dir / "model" / "model.json")
    assert contract.converted is not None
    assert [(s.dtype, s.shape) for s in contract.converted.inputs] == [("uint8", (8, 32, 32, 3))]
    manifest = load_manifest(demo.pipeline.work_dir / "bins")
    assert manifest.inputs[0].dtype == "uint8"
    assert manifest.inputs[0].preprocessing["declared"]["scale"] == pytest.approx(1 / 255)
    report = json.loads((demo.pipeline.work_dir / "report" / "report.json").read_text())
    check = report["preprocessing"][0]
    assert check["passed"] and check["mismatches"] == []
    assert max(check["max_abs_diff_per_channel"]) <= check["tolerance"]
    assert any(arg.startswith("--insert_op_conf=") for arg in demo.pipeline.atc_command)
    assert "--insert_op_conf=" in demo.pipeline.report_path.read_text()
    page = (demo.pipeline.work_dir / "report" / "report.html").read_text()
    assert "Preprocessing (AIPP against the declared preprocessing)" in page


def test_declared_preprocessing_of_the_bins_is_what_dump_bin_does_host_side(demo: DemoResult,
                                                                              tmp_path: Path) -> None:
    """TensorFlow's feed in compare equals the float bins dump-bin writes for the unconverted model."""
    from infer.dump_bin._dump import DumpOptions, dump_bins
    from infer.preprocessing import ImageOptions

    work = demo.pipeline.work_dir
    contract = load_contract(work / "model" / "model.json")
    shutil.copy(contract.pb_path, tmp_path / contract.pb)
    unconverted = replace(contract, converted=None, path=tmp_path / "model.json")
    images = demo.dataset.image_folder
    float_bins = dump_bins(unconverted, DumpOptions(output=tmp_path / "bins", sources=(("", str(images)),),
                                                    image=ImageOptions(scale=1 / 255))).manifest
    aipp_bins = load_manifest(work / "bins")
    declared = DeclaredPreprocessing.from_json(aipp_bins.inputs[0].preprocessing["declared"])
    for entry_u8, entry_f in zip(aipp_bins.inputs[0].files, float_bins.inputs[0].files, strict=True):
        pixels = read_bin(aipp_bins.file_path(aipp_bins.inputs[0], entry_u8), aipp_bins.inputs[0].spec)
        floats = read_bin(float_bins.file_path(float_bins.inputs[0], entry_f), float_bins.inputs[0].spec)
        np.testing.assert_allclose(declared.apply(pixels).astype(np.float32), floats, rtol=1e-6, atol=1e-7)


def test_compare_prints_the_preprocessing_check(capsys: pytest.CaptureFixture[str], demo: DemoResult) -> None:
    work = demo.pipeline.work_dir
    outcome = run_cli(capsys, "compare", work / "model" / "model.json", "--input", work / "bins", "--actual",
                      work / "out")
    assert outcome.code == 0, outcome.err
    assert "preprocessing: AIPP output of images:0 matches the declared preprocessing" in outcome.out


def test_hand_written_config_with_the_channel_swap_on_fails_and_names_it(capsys: pytest.CaptureFixture[str],
                                                                         demo: DemoResult) -> None:
    generated = (demo.pipeline.work_dir / "model" / "aipp.cfg").read_text()
    assert "rbuv_swap_switch: false" in generated
    outcome = _run_with_config(capsys, demo, generated.replace("rbuv_swap_switch: false", "rbuv_swap_switch: true"))
    assert outcome.code == 1
    verdict = next(line for line in outcome.out.splitlines() if line.startswith("FAILED"))
    assert verdict.startswith("FAILED: preprocessing: AIPP output of images:0 differs from the declared "
                              "preprocessing by up to [1, ")
    assert "rbuv_swap_switch true (channel swap), the declared --color RGB needs false" in verdict


def test_hand_written_config_with_a_mean_off_names_that_channel(capsys: pytest.CaptureFixture[str],
                                                                demo: DemoResult) -> None:
    generated = (demo.pipeline.work_dir / "model" / "aipp.cfg").read_text()
    outcome = _run_with_config(capsys, demo, generated.replace("mean_chn_1: 0", "mean_chn_1: 2"))
    verdict = next(line for line in outcome.out.splitlines() if line.startswith("FAILED"))
    assert verdict.startswith("FAILED: preprocessing: AIPP output of images:0")
    assert "mean_chn_1 + min_chn_1 = 2, the declared mean / scale = 0" in verdict
    assert "rbuv_swap_switch" not in verdict
