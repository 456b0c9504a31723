"""`infer run --dry-run`: the exact command line of each tool start (what a user copies to the Ascend server), or
what an in-process backend would run; checked like a run, nothing run and nothing written."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

import numpy as np
import pytest

from binio.manifest import DatasetManifest
from infer.contract import ModelContract
from infer.run import RunError, RunOptions, ScaleOptions, plan_run, run_model
from infer.run.options import Backend
from tests.builders.bins import write_dataset
from tests.cli import run_cli
from tests.infer.run_data import hide_tools, two_input_batches, two_input_model, use_fake_tools


def _tree(root: Path) -> list[tuple[str, int]]:
    return sorted((str(p.relative_to(root)), p.stat().st_mtime_ns) for p in root.rglob("*"))


@pytest.fixture
def om_and_bins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[ModelContract, DatasetManifest]:
    monkeypatch.chdir(tmp_path)
    return two_input_model(tmp_path / "model", "om"), write_dataset(tmp_path / "bins", two_input_batches(3))


def test_msame_dry_run_prints_its_exact_command_without_msame_installed_and_writes_nothing(
        om_and_bins: tuple[ModelContract, DatasetManifest], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    hide_tools(monkeypatch, tmp_path)
    before = _tree(tmp_path)
    outcome = run_cli(capsys, "run", "model/model.json", "--input", "bins", "-o", "runs", "--dry-run",
                      "--device", "1", "--loop", "3")
    assert outcome.code == 0, outcome.err
    lines = outcome.out.splitlines()
    assert lines[0] == "msame runs model.om over 3 batches in one start"
    assert lines[1:] == ["msame --model model/model.om --input bins/a,bins/b --output runs --outfmt BIN "
                         "--device 1 --loop 3"]
    assert _tree(tmp_path) == before  # no run folder, no output root, nothing touched


def test_ais_bench_dry_run_names_every_flag_it_would_pass(
        om_and_bins: tuple[ModelContract, DatasetManifest], tmp_path: Path) -> None:
    om, bins = om_and_bins
    plan = plan_run(om.path, bins.root, tmp_path / "my runs", RunOptions(backend="ais_bench", warmup=2, dry_run=True))
    assert plan.commands == (("python3", "-m", "ais_bench", "--model", "model/model.om", "--input",
                              "bins/a,bins/b", "--output", "my runs", "--outfmt", "BIN", "--warmup_count", "2"),)
    assert plan.lines() == ("python3 -m ais_bench --model model/model.om --input bins/a,bins/b "
                            "--output 'my runs' --outfmt BIN --warmup_count 2",)
    assert shlex.split(plan.lines()[0]) == list(plan.commands[0])
    assert not (tmp_path / "my runs").exists()


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["msame", "ais_bench"])
def test_the_printed_line_run_by_hand_computes_what_infer_run_computes(
        om_and_bins: tuple[ModelContract, DatasetManifest], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        backend: Backend) -> None:
    use_fake_tools(monkeypatch)
    om, bins = om_and_bins
    options = RunOptions(backend=backend)
    (line,) = plan_run(om.path, bins.root, "by-hand", RunOptions(backend=backend, dry_run=True)).lines()
    subprocess.run(line, shell=True, check=True, capture_output=True)  # as the user pastes it
    (tool_folder,) = [p for p in Path("by-hand").iterdir() if p.is_dir()]
    ran = run_model(om, bins, tmp_path / "runs", options)
    suffix = "_output_0.bin" if backend == "msame" else "_0.bin"
    for stem in ran.record.stems:
        by_hand = np.fromfile(tool_folder / f"{stem}{suffix}", np.float32)
        np.testing.assert_array_equal(by_hand, np.fromfile(ran.folder / f"{stem}_output_0.bin", np.float32))


def test_onnxrt_dry_run_says_what_would_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    two_input_model(tmp_path / "model", "onnx")
    write_dataset(tmp_path / "bins", two_input_batches(2))
    outcome = run_cli(capsys, "run", "model/model.json", "--input", "bins", "-o", "runs", "--dry-run", "--json",
                      "--threads", "2")
    assert outcome.code == 0, outcome.err
    document = json.loads(outcome.out)
    assert document["schema"] == "infer.run-plan" and document["dry_run"] is True
    assert document["backend"] == "onnxrt" and document["commands"] == [] and document["lines"] == []
    assert document["batches"] == 2 and document["batch"] == 2
    assert document["summary"] == ("ONNX Runtime (2 threads; loop 1, warm-up 1) runs model/model.onnx over 2 "
                                   "batches of 2 (4 samples; a:0 <- bins/a, b:0 <- bins/b) into runs/<timestamp>/")
    assert [i["tensor"] for i in document["inputs"]] == ["a:0", "b:0"]
    assert not (tmp_path / "runs").exists()


def test_a_dry_run_checks_the_bins_as_a_run_does(om_and_bins: tuple[ModelContract, DatasetManifest],
                                                tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, bins = om_and_bins
    (bins.root / "a" / "000001.bin").write_bytes(b"short")
    outcome = run_cli(capsys, "run", "model/model.json", "--input", "bins", "-o", "runs", "--dry-run")
    assert outcome.code == 2
    assert "000001.bin" in outcome.error_line
    assert not (tmp_path / "runs").exists()


def test_what_a_dry_run_cannot_show_is_refused(om_and_bins: tuple[ModelContract, DatasetManifest],
                                              tmp_path: Path) -> None:
    om, bins = om_and_bins
    with pytest.raises(RunError, match="--dry-run with --dump"):
        plan_run(om, bins, tmp_path / "runs", RunOptions(dry_run=True, dump=True))
    with pytest.raises(RunError, match="--dry-run with shards"):
        plan_run(om, bins, tmp_path / "runs", RunOptions(dry_run=True), ScaleOptions(shards=2))
    with pytest.raises(RunError, match="run_model with dry_run"):
        run_model(om, bins, tmp_path / "runs", RunOptions(dry_run=True))
    assert not (tmp_path / "runs").exists()
