"""`infer run --devices`: shards over device slots, merged into the layout of a single run, byte for byte."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from binio.manifest import DatasetManifest
from binio.shards import split
from binio.spec import TensorSpec
from infer.contract import ModelContract
from infer.run import RunResult, run_model
from infer.run._shard import finished_stems
from infer.run._sharded import run_sharded
from infer.run.layout import output_file_name
from infer.run.options import Backend, RunOptions, ScaleOptions
from infer.run.record import load_run
from tests.cli import run_cli
from tests.conftest import Copy
from tests.infer.run_data import as_om, use_fake_tools
from tests.infer.scale_data import BATCHES, assert_same_outputs, output_files, scale_bins


@pytest.fixture(scope="module")
def bins(tmp_path_factory: pytest.TempPathFactory) -> DatasetManifest:
    return scale_bins(tmp_path_factory.mktemp("scale_bins"))


@pytest.fixture(scope="module")
def onnx_single(onnx_small_cnn: ModelContract, bins: DatasetManifest,
                tmp_path_factory: pytest.TempPathFactory) -> RunResult:
    return run_model(onnx_small_cnn.path, bins.root, tmp_path_factory.mktemp("onnx_single"))


@pytest.fixture
def om(onnx_small_cnn: ModelContract, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModelContract:
    use_fake_tools(monkeypatch)
    return as_om(onnx_small_cnn, tmp_path / "om")


def test_shards_are_contiguous_deterministic_and_cover_every_batch() -> None:
    stems = tuple(f"{i:06d}" for i in range(7))
    shards = split(stems, 3)
    assert [s.stems for s in shards] == [stems[0:3], stems[3:5], stems[5:7]]
    assert [s.first for s in shards] == [0, 3, 5] and split(stems, 3) == shards
    assert [len(s.stems) for s in split(stems, 10)] == [1] * 7  # never an empty shard
    assert shards[1].describe() == "shard 1 (batches 000003-000004)"


@pytest.mark.slow
def test_onnxrt_over_two_worker_processes_is_byte_identical(onnx_small_cnn: ModelContract, bins: DatasetManifest,
                                                            onnx_single: RunResult, tmp_path: Path) -> None:
    result = run_sharded(onnx_small_cnn.path, bins.root, tmp_path, RunOptions(), ScaleOptions(devices=(0, 1)))
    assert result and result.folder.parent == tmp_path
    assert_same_outputs(onnx_single.folder, result.folder)
    record = load_run(result.folder)
    assert record.completed and record.stems == onnx_single.record.stems and record.rows == (2, 2, 2, 2, 1)
    assert record.outputs == onnx_single.record.outputs and record.samples == 9 and record.padding == 1
    scaled = record.scale_out
    assert scaled is not None and (scaled.engine, scaled.shard_count, scaled.failed) == ("local", 2, ())
    assert [s.stems for s in scaled.shards] == [record.stems[:3], record.stems[3:]]
    assert all(s.throughput and s.attempts == 1 and s.device == "CPUExecutionProvider" for s in scaled.shards)
    assert record.throughput == pytest.approx(sum(s.throughput or 0 for s in scaled.shards))
    assert scaled.wall_throughput is not None and len(record.latency.per_batch_ms) == BATCHES
    document = json.loads(record.path.read_text())
    assert document["scale_out"]["shards"][1]["first"] == "000003"


@pytest.mark.slow
@pytest.mark.parametrize("tool", ["msame", "ais_bench"])
def test_tools_one_process_per_device_is_byte_identical(om: ModelContract, bins: DatasetManifest, tmp_path: Path,
                                                        tool: Backend) -> None:
    options = RunOptions(backend=tool)
    single = run_model(om.path, bins.root, tmp_path / "single", options)
    result = run_sharded(om.path, bins.root, tmp_path / "sharded", options, ScaleOptions(devices=(2, 0, 1)))
    assert_same_outputs(single.folder, result.folder)
    scaled = result.record.scale_out
    assert scaled is not None and [len(s.stems) for s in scaled.shards] == [2, 2, 1]
    assert [s.device for s in scaled.shards] == [f"{tool} device 2", f"{tool} device 0", f"{tool} device 1"]
    for shard, device in zip(scaled.shards, ("2", "0", "1"), strict=True):
        argv = list(shard.command)
        assert argv[argv.index("--device") + 1] == device
        assert f"shard-{shard.index:03d}" in argv[argv.index("--input") + 1]


@pytest.mark.slow
def test_a_failed_shard_is_retried_for_what_it_missed(om: ModelContract, bins: DatasetManifest,
                                                      tmp_path: Path) -> None:
    single = run_model(om.path, bins.root, tmp_path / "single")
    (om.folder / "model.om.fail-once.shard-001").touch()
    result = run_sharded(om.path, bins.root, tmp_path / "sharded", RunOptions(), ScaleOptions(devices=(0, 1)))
    assert not (om.folder / "model.om.fail-once.shard-001").exists()  # the fake did fail once
    assert_same_outputs(single.folder, result.folder)
    scaled = result.record.scale_out
    assert scaled is not None and [s.attempts for s in scaled.shards] == [1, 2]


@pytest.mark.slow
def test_a_shard_failing_every_attempt_is_named_the_rest_kept_and_resume_runs_only_it(
        om: ModelContract, bins: DatasetManifest, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    single = run_model(om.path, bins.root, tmp_path / "single")
    marker = om.folder / "model.om.fail-always.shard-001"
    marker.touch()
    out = tmp_path / "sharded"
    outcome = run_cli(capsys, "run", om.path, "--input", bins.root, "-o", out, "--devices", "0,1")
    assert outcome.code == 2
    folder = next(out.iterdir())
    assert outcome.error_line == (
        f"error: {folder}: 1 of 2 shards failed (shard 1 (batches 000003-000004)) after 2 attempt(s) each; "
        "shard 1 (batches 000003-000004): msame failed (exit 0): [ERROR] input file size is not equal to model "
        "input size (command: " + outcome.error_line.split("(command: ", 1)[1])
    assert "hint: the 3 finished batches are kept; re-run with --resume to run only the missing ones" in outcome.err
    record = load_run(folder)
    assert not record.completed and record.stems == ("000000", "000001", "000002")
    assert output_files(folder) == [f"00000{i}_output_0.bin" for i in range(3)]
    assert record.scale_out is not None and len(record.scale_out.failed) == 1
    kept = {name: (folder / name).stat().st_ino for name in output_files(folder)}

    marker.unlink()
    outcome = run_cli(capsys, "run", om.path, "--input", bins.root, "-o", out, "--devices", "0,1", "--resume")
    assert outcome.code == 0, outcome.err
    assert "3 batches already done" in outcome.out
    assert [p for p in out.iterdir()] == [folder]  # the same run folder, finished
    assert_same_outputs(single.folder, folder)
    assert {name: (folder / name).stat().st_ino for name in kept} == kept  # the finished ones were not redone
    record = load_run(folder)
    assert record.completed and record.scale_out is not None and record.scale_out.resumed_stems == 3
    assert [s.index for s in record.scale_out.shards] == [1]
    outcome = run_cli(capsys, "run", om.path, "--input", bins.root, "-o", out, "--devices", "0,1", "--resume")
    assert outcome.code == 0 and [p for p in out.iterdir()] == [folder]  # complete: nothing to do


@pytest.mark.slow
def test_resume_redoes_a_batch_whose_output_was_cut_short(om: ModelContract, bins: DatasetManifest,
                                                         tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A run stopped while an output was being written (or a disk that filled) leaves a short file: resume counts
    a batch as done only when every output file has its full size, and runs the short one again."""
    single = run_model(om.path, bins.root, tmp_path / "single")
    marker = om.folder / "model.om.fail-always.shard-001"
    marker.touch()
    out = tmp_path / "sharded"
    assert run_cli(capsys, "run", om.path, "--input", bins.root, "-o", out, "--devices", "0,1").code == 2
    folder = next(out.iterdir())
    cut = folder / "000001_output_0.bin"
    whole = cut.read_bytes()
    cut.write_bytes(whole[: len(whole) // 2])
    marker.unlink()
    outcome = run_cli(capsys, "run", om.path, "--input", bins.root, "-o", out, "--devices", "0,1", "--resume")
    assert outcome.code == 0, outcome.err
    assert "2 batches already done" in outcome.out
    assert cut.read_bytes() == whole
    assert_same_outputs(single.folder, folder)
    record = load_run(folder)
    assert record.completed and record.scale_out is not None and record.scale_out.resumed_stems == 2


def test_finished_stems_counts_only_batches_with_every_output_whole(tmp_path: Path) -> None:
    outputs = (TensorSpec("a:0", "float32", (2, 3)), TensorSpec("b:0", "int32", (2,)))
    for stem, sizes in {"000000": (24, 8), "000001": (24, 4), "000002": (23, 8), "000004": (24, 8)}.items():
        for index, size in enumerate(sizes):
            (tmp_path / output_file_name(stem, index)).write_bytes(bytes(size))
    (tmp_path / output_file_name("000003", 0)).write_bytes(bytes(24))  # its second output is missing
    stems = ("000000", "000001", "000002", "000003", "000004")
    assert finished_stems(tmp_path, stems, outputs) == ("000000", "000004")


def test_cli_devices_prints_each_shard(onnx_small_cnn: ModelContract, bins: DatasetManifest, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    outcome = run_cli(capsys, "run", onnx_small_cnn.path, "--input", bins.root, "-o", tmp_path, "--devices", "0",
                      "--shards", "2")
    assert outcome.code == 0, outcome.err
    assert "  shard 0: 3 batches on CPUExecutionProvider" in outcome.out
    assert "  shard 1: 2 batches on CPUExecutionProvider" in outcome.out
    assert "2 shards (local): " in outcome.out


@pytest.mark.parametrize(("args", "message"), [
    (("--devices", "0,x"), "error: --devices 0,x: expected device numbers separated by commas (e.g. 0,1,2,3)"),
    (("--devices", "1,1"), "error: --devices 1,1: expected distinct device numbers, 0 or more"),
    (("--devices", "0,1", "--device", "0"), "error: --device and --devices together: give one"),
    (("--engine", "spark"), "error: --engine spark: expected one of local, ray"),
    (("--engine", "ray", "--devices", "0,1"), "error: --devices with --engine ray: Ray grants the devices itself"),
    (("--address", "1.2.3.4:6379"), "error: --address is for --engine ray"),
    (("--shards", "0"), "error: --shards 0: expected 1 or more"),
])
def test_refusals(onnx_small_cnn: ModelContract, bins: DatasetManifest, tmp_path: Path,
                  capsys: pytest.CaptureFixture[str], args: tuple[str, ...], message: str) -> None:
    outcome = run_cli(capsys, "run", onnx_small_cnn.path, "--input", bins.root, "-o", tmp_path / "out", *args)
    assert (outcome.code, outcome.error_line) == (2, message)
    assert not (tmp_path / "out").exists()


def test_engine_ray_without_ray_says_how_to_install_it(onnx_small_cnn: ModelContract, bins: DatasetManifest,
                                                       tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    outcome = run_cli(capsys, "run", onnx_small_cnn.path, "--input", bins.root, "-o", tmp_path / "out",
                      "--engine", "ray")
    assert (outcome.code, outcome.error_line) == (2, "error: --engine ray: Ray is not installed")
    assert 'hint: pip install "infer[ray]" (or pip install ".[ray]" in a checkout of infer)' in outcome.err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("backend", ["onnxrt", "tf"])
def test_a_model_changed_since_the_contract_is_refused_before_any_worker_starts(
        copy_model: Copy, onnx_small_cnn: ModelContract, bins: DatasetManifest, tmp_path: Path,
        capsys: pytest.CaptureFixture[str], backend: Backend) -> None:
    model = copy_model(onnx_small_cnn)
    changed = model.pb_path if backend == "tf" else model.converted_path
    assert changed is not None
    changed.write_bytes(changed.read_bytes() + b"\0")
    outcome = run_cli(capsys, "run", model.path, "--input", bins.root, "-o", tmp_path / "out", "--backend", backend,
                      "--devices", "0,1")
    assert outcome.code == 2 and f"{changed.name} changed since" in outcome.error_line
    assert not (tmp_path / "out").exists()
