"""msame and ais_bench runners against the fakes in tests/fakes, which compute real outputs from the bins."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from binio.manifest import bin_file_name
from infer.contract import ModelContract
from infer.run._runners.ais_bench import AisBenchRunner
from infer.run._runners.base import RunnerError
from infer.run._runners.msame import MsameRunner
from infer.run.layout import parse_timestamp_folder
from tests.builders.bins import write_dataset
from tests.infer.run_data import hide_tools, two_input_batches, two_input_model, use_fake_tools

STAND_IN = "the stand-in is --backend onnxrt after infer convert --target onnx"


@pytest.fixture
def om(tmp_path: Path) -> ModelContract:
    return two_input_model(tmp_path / "model", "om")


def _dataset(tmp_path: Path) -> tuple[list[Path], dict[str, list[np.ndarray]]]:
    batches = two_input_batches(3)
    manifest = write_dataset(tmp_path / "bins", batches)
    return [manifest.root / item.folder for item in manifest.inputs], batches


@pytest.mark.slow
@pytest.mark.parametrize("form", ["padded", "unpadded"])
def test_msame_runs_the_folders_and_its_outputs_are_found_in_either_timestamp_form(
        om: ModelContract, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, form: str) -> None:
    use_fake_tools(monkeypatch)
    monkeypatch.setenv("FAKE_MSAME_TIMESTAMP", form)
    dirs, batches = _dataset(tmp_path)
    with MsameRunner.from_contract(om) as runner:
        run = runner.run_folders(dirs, ["000000", "000001", "000002"], tmp_path / "work")
    assert parse_timestamp_folder(run.folder.name) is not None
    assert (re.fullmatch(r"\d{8}_\d{6}", run.folder.name) is not None) == (form == "padded")
    assert run.command[1:] == ("--model", str(om.converted_path), "--input", ",".join(map(str, dirs)),
                               "--output", str(tmp_path / "work"), "--outfmt", "BIN")
    assert run.timings.mean_ms is not None and len(run.timings.per_batch_ms) == 3
    for index, stem in enumerate(["000000", "000001", "000002"]):
        total = np.fromfile(run.files[stem][0], np.float32).reshape(2, 3)
        half = np.fromfile(run.files[stem][1], np.float16).reshape(2, 3)
        expected = batches["a:0"][index] + batches["b:0"][index].astype(np.float32)
        np.testing.assert_array_equal(total, expected)
        np.testing.assert_array_equal(half, expected.astype(np.float16))
        assert run.files[stem][0].name == f"{stem}_output_0.bin"


@pytest.mark.slow
def test_msame_runner_answers_one_batch_through_infer(om: ModelContract, monkeypatch: pytest.MonkeyPatch) -> None:
    use_fake_tools(monkeypatch)
    a = np.ones((2, 3), np.float32)
    b = np.full((2, 3), 2.5, np.float16)
    with MsameRunner.from_contract(om, device=1) as runner:
        assert runner.device == "msame device 1"
        total, half = runner.infer({"a:0": a, "b:0": b})
    np.testing.assert_array_equal(total, np.full((2, 3), 3.5, np.float32))
    assert half.dtype == np.float16


@pytest.mark.slow
def test_msame_error_line_with_exit_0_is_a_failure(
        om: ModelContract, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_fake_tools(monkeypatch)
    monkeypatch.setenv("FAKE_MSAME_FAIL", "1")
    dirs, _ = _dataset(tmp_path)
    with MsameRunner.from_contract(om) as runner, pytest.raises(RunnerError) as caught:
        runner.run_folders(dirs, ["000000"], tmp_path / "work")
    assert str(caught.value) == "msame failed (exit 0): [ERROR] input file size is not equal to model input size"
    assert caught.value.hint is not None and "--outfmt BIN" in caught.value.hint


def test_msame_not_installed_names_the_stand_in(
        om: ModelContract, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hide_tools(monkeypatch, tmp_path)
    with pytest.raises(RunnerError) as caught:
        MsameRunner.from_contract(om).activate()
    assert str(caught.value) == f"msame is not installed (not found on PATH); {STAND_IN}"


@pytest.mark.slow
def test_ais_bench_outputs_and_summary(om: ModelContract, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_fake_tools(monkeypatch)
    dirs, batches = _dataset(tmp_path)
    with AisBenchRunner.from_contract(om, device=0, warmup=2) as runner:
        run = runner.run_folders(dirs, ["000000", "000001", "000002"], tmp_path / "work")
    assert run.command[:3] == (sys.executable, "-m", "ais_bench")
    assert run.command[-4:] == ("--device", "0", "--warmup_count", "2")
    summary = json.loads((tmp_path / "work" / f"{run.folder.name}_summary.json").read_text())
    assert run.timings.mean_ms == pytest.approx(summary["NPU_compute_time"]["mean"])
    assert run.timings.p99_ms == pytest.approx(summary["NPU_compute_time"]["percentile(99%)"])
    assert run.timings.throughput == pytest.approx(summary["throughput"])
    assert run.files["000001"][1].name == "000001_1.bin"
    half = np.fromfile(run.files["000001"][1], np.float16).reshape(2, 3)
    np.testing.assert_array_equal(half, (batches["a:0"][1] + batches["b:0"][1].astype(np.float32)).astype(np.float16))


@pytest.mark.slow
def test_ais_bench_error_is_a_failure(om: ModelContract, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_fake_tools(monkeypatch)
    monkeypatch.setenv("FAKE_AIS_BENCH_FAIL", "1")
    dirs, _ = _dataset(tmp_path)
    with AisBenchRunner.from_contract(om) as runner, pytest.raises(RunnerError) as caught:
        runner.run_folders(dirs, [bin_file_name(0)[:-4]], tmp_path / "work")
    assert str(caught.value) == ("ais_bench failed (exit 1): [ERROR] Invalid input: file size is not equal to "
                                 "model input size")


def test_ais_bench_not_installed_names_the_stand_in(
        om: ModelContract, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hide_tools(monkeypatch, tmp_path)
    with pytest.raises(RunnerError) as caught:
        AisBenchRunner.from_contract(om).activate()
    assert str(caught.value) == (f"ais_bench is not installed ({sys.executable} -m ais_bench: No module named "
                                 f"ais_bench); {STAND_IN}")


@pytest.mark.slow
def test_msame_loop_repeats_the_folder_and_latency_is_per_batch(
        om: ModelContract, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_fake_tools(monkeypatch)
    dirs, _ = _dataset(tmp_path)
    with MsameRunner.from_contract(om, loop=2) as runner:
        run = runner.run_folders(dirs, ["000000", "000001", "000002"], tmp_path / "work")
    assert run.command[-2:] == ("--loop", "2")
    assert len(run.timings.per_batch_ms) == 3 and run.timings.p99_ms is not None


def test_msame_timings_are_its_own_lines() -> None:
    """msame's average leaves out the first run, so it is not the mean of the per-file lines: it is read, not
    recomputed; with --loop 2 each batch's latency is the mean of its two runs."""
    from infer.run._runners.msame import msame_timings

    lines = ["[INFO] start to process file:bins/a/000000.bin", "Inference time: 9.500ms",
             "[INFO] start to process file:bins/a/000001.bin", "Inference time: 1.500ms",
             "  Inference time: 2.500ms", "Inference time: 2.000ms",
             "Inference average time : 2.000000 ms", "Inference average time without first time: 2.00 ms",
             "[INFO] Execute sample success"]
    timings = msame_timings(lines, loop=2, batches=2)
    assert timings.mean_ms == 2.0
    assert timings.per_batch_ms == (6.0, 1.75)
    runs = [9.5, 1.5, 2.5, 2.0]  # percentiles over every run msame timed
    assert timings.p50_ms == pytest.approx(np.percentile(runs, 50))
    assert timings.p99_ms == pytest.approx(np.percentile(runs, 99))
    assert msame_timings(["Inference time: 3.0ms"], loop=1, batches=1).mean_ms == 3.0  # no average line: the mean
