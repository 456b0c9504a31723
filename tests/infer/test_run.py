"""`infer run` end to end: every backend into one layout, run.json read back, and each refusal's exact line."""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from binio.binfile import sha256_file
from binio.manifest import DatasetManifest
from infer.contract import ModelContract
from infer.run import RunResult, run_model
from infer.run.layout import RUN_JSON, output_file_name, parse_timestamp_folder
from infer.run.options import Backend, RunOptions
from infer.run.record import RunRecordError, load_run
from tests.builders.bins import write_dataset
from tests.cli import run_cli
from tests.infer.om_files import OmPlan, write_om
from tests.infer.run_data import as_om, cnn_batches, hide_tools, two_input_batches, two_input_model, use_fake_tools

STAND_IN = "the stand-in is --backend onnxrt after infer convert --target onnx"


@pytest.fixture(scope="module")
def cnn_bins(tmp_path_factory: pytest.TempPathFactory) -> DatasetManifest:
    """3 batches of 2 for the small CNN, the last with one row of padding. Read-only."""
    return write_dataset(tmp_path_factory.mktemp("cnn_bins"), {"images:0": cnn_batches(3)}, samples=5,
                         layout="NHWC")


@pytest.fixture(scope="module")
def tf_run(frozen_small_cnn: ModelContract, cnn_bins: DatasetManifest,
           tmp_path_factory: pytest.TempPathFactory) -> RunResult:
    return run_model(frozen_small_cnn.path, cnn_bins.root, tmp_path_factory.mktemp("tf_out"))


@pytest.fixture(scope="module")
def om_small_cnn(onnx_small_cnn: ModelContract, tmp_path_factory: pytest.TempPathFactory) -> ModelContract:
    return as_om(onnx_small_cnn, tmp_path_factory.mktemp("om_small_cnn") / "model")


def _outputs(folder: Path) -> list[np.ndarray]:
    record = load_run(folder)
    return [record.read_output(stem, 0) for stem in record.stems]


def test_tf_run_writes_msames_layout_and_a_complete_record(tf_run: RunResult, frozen_small_cnn: ModelContract,
                                                           cnn_bins: DatasetManifest) -> None:
    from infer.run._runners.tensorflow import TensorFlowRunner

    assert tf_run and parse_timestamp_folder(tf_run.folder.name) is not None
    assert sorted(p.name for p in tf_run.folder.iterdir()) == [
        "000000_output_0.bin", "000001_output_0.bin", "000002_output_0.bin", RUN_JSON]
    record = load_run(tf_run.folder.parent)  # the output root: its newest run
    assert record == tf_run.record
    assert (record.backend, record.batch, record.samples, record.padding) == ("tf", 2, 5, 1)
    assert record.rows == (2, 2, 1) and record.completed
    assert record.model_sha256 == frozen_small_cnn.pb_sha256
    assert [(s.name, s.dtype, s.shape) for s in record.outputs] == [("probs:0", "float32", (2, 5))]
    assert len(record.latency.per_batch_ms) == 3 and record.latency.mean_ms is not None
    assert record.latency.p50_ms is not None and record.latency.p99_ms is not None
    assert record.throughput is not None and record.throughput > 0
    document = json.loads(record.path.read_text())
    assert document["dataset"]["sha256"] == hashlib.sha256(cnn_bins.path.read_bytes()).hexdigest()
    with TensorFlowRunner(frozen_small_cnn) as runner:
        for stem, images in zip(record.stems, cnn_batches(3), strict=True):
            np.testing.assert_array_equal(record.read_output(stem, 0), runner.infer({"images:0": images})[0])


def test_onnxrt_run_agrees_with_tf_run(tf_run: RunResult, onnx_small_cnn: ModelContract, cnn_bins: DatasetManifest,
                                       tmp_path: Path) -> None:
    result = run_model(onnx_small_cnn.path, cnn_bins.root, tmp_path, RunOptions(loop=3, warmup=2, threads=1))
    record = result.record
    assert (record.backend, record.device, record.loop, record.warmup, record.threads) == (
        "onnxrt", "CPUExecutionProvider", 3, 2, 1)
    assert onnx_small_cnn.converted is not None and record.model_sha256 == onnx_small_cnn.converted.sha256
    for converted, golden in zip(_outputs(result.folder), _outputs(tf_run.folder), strict=True):
        np.testing.assert_allclose(converted, golden, rtol=1e-5, atol=1e-6)


def test_a_model_json_runs_what_convert_made_and_a_file_picks_its_backend(
        onnx_small_cnn: ModelContract, cnn_bins: DatasetManifest, tmp_path: Path) -> None:
    assert onnx_small_cnn.converted_path is not None
    assert run_model(onnx_small_cnn.path, cnn_bins.root, tmp_path / "a").record.backend == "onnxrt"
    assert run_model(onnx_small_cnn.pb_path, cnn_bins.root, tmp_path / "b").record.backend == "tf"
    assert run_model(onnx_small_cnn.converted_path, cnn_bins.root, tmp_path / "c").record.backend == "onnxrt"


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["msame", "ais_bench"])
def test_fake_tool_runs_land_in_the_same_layout_as_onnxrt(
        backend: Backend, om_small_cnn: ModelContract, onnx_small_cnn: ModelContract, cnn_bins: DatasetManifest,
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_fake_tools(monkeypatch)
    stand_in = run_model(onnx_small_cnn.path, cnn_bins.root, tmp_path / "onnxrt")
    result = run_model(om_small_cnn.path, cnn_bins.root, tmp_path / backend, RunOptions(backend=backend))
    record = result.record
    assert record.backend == backend and record.completed and record.tool_command
    assert sorted(p.name for p in result.folder.iterdir()) == sorted(p.name for p in stand_in.folder.iterdir())
    assert record.latency.mean_ms is not None and len(record.latency.per_batch_ms) == 3
    assert record.throughput is not None
    for ours, theirs in zip(_outputs(result.folder), _outputs(stand_in.folder), strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-7)


@pytest.mark.slow
def test_om_contract_defaults_to_msame_and_reads_outputs_with_the_oms_dtypes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_fake_tools(monkeypatch)
    monkeypatch.setenv("FAKE_MSAME_TIMESTAMP", "padded")
    contract = two_input_model(tmp_path / "model", "om")
    batches = two_input_batches(2)
    manifest = write_dataset(tmp_path / "bins", batches)
    record = run_model(contract.path, manifest.root, tmp_path / "out").record
    assert record.backend == "msame"
    assert [(s.name, s.dtype) for s in record.outputs] == [("sum:0", "float32"), ("half:0", "float16")]
    expected = batches["a:0"][1] + batches["b:0"][1].astype(np.float32)
    np.testing.assert_array_equal(record.read_output("000001", 1), expected.astype(np.float16))
    assert record.read_output("000001", 1).dtype == np.float16


@pytest.mark.slow
def test_bins_made_for_another_model_run_with_a_warning(onnx_small_cnn: ModelContract, tmp_path: Path,
                                                        caplog: pytest.LogCaptureFixture) -> None:
    manifest = replace(write_dataset(tmp_path / "bins", {"images:0": cnn_batches(1)}), model_sha256="ab" * 32).save()
    with caplog.at_level("WARNING", logger="infer.run._plain"):
        assert run_model(onnx_small_cnn.path, manifest.root, tmp_path / "out").record.completed
    assert caplog.messages == [f"{manifest.path}: made for another model (sha256 {'ab' * 6}), running "
                               f"{onnx_small_cnn.converted_path}"]
    caplog.clear()
    # taken on purpose (compare's emulated precision): quiet
    with caplog.at_level("WARNING", logger="infer.run._plain"):
        options = RunOptions(bins_made_for="ab" * 32)
        assert run_model(onnx_small_cnn.path, manifest.root, tmp_path / "out", options).record.completed
    assert caplog.messages == []
    from infer.run._sharded import run_sharded
    from infer.run.options import ScaleOptions

    with caplog.at_level("WARNING", logger="infer.run._plain"):  # a sharded run warns once, as a plain one does
        assert run_sharded(onnx_small_cnn.path, manifest.root, tmp_path / "sharded", RunOptions(),
                           ScaleOptions(devices=(0, 1))).record.completed
    assert caplog.messages == [f"{manifest.path}: made for another model (sha256 {'ab' * 6}), running "
                               f"{onnx_small_cnn.converted_path}"]


def test_interrupted_run_keeps_finished_outputs_and_is_marked_incomplete(
        onnx_small_cnn: ModelContract, cnn_bins: DatasetManifest, tmp_path: Path) -> None:
    calls: list[tuple[int, int]] = []

    def progress(done: int, total: int) -> None:
        calls.append((done, total))
        if done == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_model(onnx_small_cnn.path, cnn_bins.root, tmp_path, progress=progress)
    record = load_run(tmp_path)
    # Outputs are written behind the inference: the batch after the interrupted one may have landed too.
    assert not record.completed and record.stems in (cnn_bins.stems[:2], cnn_bins.stems[:3])
    assert record.rows == (2, 2, 1)[: len(record.stems)]
    assert calls == [(1, 3), (2, 3)]
    assert sorted(p.name for p in record.folder.iterdir()) == sorted(
        [output_file_name(stem, 0) for stem in record.stems] + [RUN_JSON])  # no partial, no temporary file
    for stem in record.stems:
        assert record.read_output(stem, 0).shape == (2, 5)


def test_a_run_folder_whose_run_json_is_foreign_or_missing(tmp_path: Path) -> None:
    from infer.run.record import RunRecordError

    run = tmp_path / "20240101_120000"
    run.mkdir()
    with pytest.raises(RunRecordError) as missing:
        load_run(run)
    assert str(missing.value) == f"{run / RUN_JSON}: no run.json in this run folder"
    (run / RUN_JSON).write_text('{"schema": "infer.dataset", "version": 1}')
    with pytest.raises(RunRecordError) as foreign:
        load_run(run)
    assert str(foreign.value) == f"{run / RUN_JSON}: not an infer run record (expected schema 'infer.run')"


# The command line: the exact `error:` line of each refusal.


def test_cli_run_prints_where_it_wrote(onnx_small_cnn: ModelContract, cnn_bins: DatasetManifest, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    outcome = run_cli(capsys, "run", onnx_small_cnn.path, "--input", cnn_bins.root, "-o", tmp_path, "--loop", "2")
    assert outcome.code == 0, outcome.err
    folder = next(tmp_path.iterdir())
    assert outcome.out.splitlines()[0] == "onnxrt (CPUExecutionProvider): 3 batches of 2, 5 samples (1 padding)"
    assert outcome.out.splitlines()[-1] == f"wrote {folder}"
    assert outcome.err == ""  # off a terminal the progress bar leaves nothing, not even an empty line
    assert (folder / output_file_name("000002", 0)).is_file()


@pytest.mark.slow
def test_cli_run_names_the_tool_and_its_device_once(om_small_cnn: ModelContract, cnn_bins: DatasetManifest,
                                                    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    use_fake_tools(monkeypatch)
    outcome = run_cli(capsys, "run", om_small_cnn.path, "--input", cnn_bins.root, "-o", tmp_path, "--device", "1")
    assert outcome.code == 0, outcome.err
    assert outcome.out.splitlines()[0] == "msame (device 1): 3 batches of 2, 5 samples (1 padding)"


def _refusal(capsys: pytest.CaptureFixture[str], model: Path, bins: Path, out: Path, *extra: str) -> str:
    outcome = run_cli(capsys, "run", model, "--input", bins, "-o", out, *extra)
    assert outcome.code == 2, outcome.err
    assert not out.exists() or not any(out.iterdir()), "a refused run left something behind"
    return outcome.error_line


_LOOPS = "each batch runs that many times; a latency's mean needs far fewer"


@pytest.mark.parametrize(("option", "value", "expected"), [
    ("--loop", "0", "--loop 0: expected 1 or more"),
    ("--loop", "99999999999999999999", f"--loop 99999999999999999999: expected at most 10000 ({_LOOPS})"),
    ("--warmup", "-1", "--warmup -1: expected 0 or more"),
    ("--threads", "0", "--threads 0: expected 1 or more (leave it out for the framework's default)"),
    ("--threads", "1000", "--threads 1000: expected at most {most} ({why})"),
    ("--timeout", "inf", "--timeout inf: expected seconds, a finite number more than 0"),
    ("--timeout", "nan", "--timeout nan: expected seconds, a finite number more than 0"),
    ("--device", "-1", "--device -1: expected a device index, 0 or more"),
])
def test_counts_out_of_range(onnx_small_cnn: ModelContract, cnn_bins: DatasetManifest, tmp_path: Path,
                             capsys: pytest.CaptureFixture[str], option: str, value: str, expected: str) -> None:
    """Every count is bounded, the bound in the message: a loop of 10**20 ran for ever, 1000 threads hung under a
    process limit."""
    from binio.limits import most_workers

    most, why = most_workers()
    assert _refusal(capsys, onnx_small_cnn.path, cnn_bins.root, tmp_path / "out", option, value) == \
        f"error: {expected.format(most=most, why=why)}"


def test_bins_of_another_model(onnx_small_cnn: ModelContract, tmp_path: Path,
                               capsys: pytest.CaptureFixture[str]) -> None:
    manifest = write_dataset(tmp_path / "bins", two_input_batches(1))
    assert _refusal(capsys, onnx_small_cnn.path, manifest.root, tmp_path / "out") == (
        f"error: {manifest.path}: no bins for the model's input images:0; it holds a:0, b:0 (bins of another model?)")


def test_bins_of_another_batch_size(onnx_small_cnn: ModelContract, tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    manifest = write_dataset(tmp_path / "bins", {"images:0": cnn_batches(1, batch=4)})
    assert _refusal(capsys, onnx_small_cnn.path, manifest.root, tmp_path / "out") == (
        f"error: {tmp_path / 'bins' / 'images'}: bins hold batches of 4, the model's input images:0 takes batch 2 "
        "(2,8,8,3)")


def test_dtype_mismatch(onnx_small_cnn: ModelContract, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = write_dataset(tmp_path / "bins", {"images:0": [b.astype(np.float16) for b in cnn_batches(2)]})
    assert _refusal(capsys, onnx_small_cnn.path, manifest.root, tmp_path / "out") == (
        f"error: {tmp_path / 'bins' / 'images'}: bins are float16, the model's input images:0 takes float32")


def test_a_bin_whose_size_lies(onnx_small_cnn: ModelContract, tmp_path: Path,
                               capsys: pytest.CaptureFixture[str]) -> None:
    manifest = write_dataset(tmp_path / "bins", {"images:0": cnn_batches(2)})
    bad = tmp_path / "bins" / "images" / "000001.bin"
    cnn_batches(1)[0].astype(np.float64).tofile(bad)  # the classic: tofile() of a float64 array
    assert _refusal(capsys, onnx_small_cnn.path, manifest.root, tmp_path / "out") == (
        f"error: {bad}: expected 1536 bytes for shape (2,8,8,3) float32, got 3072 (is it float64?)")


def test_missing_input_folder(onnx_small_cnn: ModelContract, tmp_path: Path,
                              capsys: pytest.CaptureFixture[str]) -> None:
    manifest = write_dataset(tmp_path / "bins", {"images:0": cnn_batches(2)})
    shutil.rmtree(tmp_path / "bins" / "images")
    assert _refusal(capsys, onnx_small_cnn.path, manifest.root, tmp_path / "out") == (
        f"error: {tmp_path / 'bins' / 'images'}: no such folder (dataset.json lists 2 bins of images:0 in it)")
    assert _refusal(capsys, onnx_small_cnn.path, tmp_path / "nowhere", tmp_path / "out") == (
        f"error: {tmp_path / 'nowhere'}: no such folder")


def test_a_folder_without_manifest_is_named_for_what_it_is(onnx_small_cnn: ModelContract, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    manifest = write_dataset(tmp_path / "bins", {"images:0": cnn_batches(2)})
    inner = manifest.root / "images"
    assert _refusal(capsys, onnx_small_cnn.path, inner, tmp_path / "out") == (
        f"error: {inner}: an input folder of the dataset {manifest.root}, not a dataset")
    shutil.copytree(inner, tmp_path / "bare")
    assert _refusal(capsys, onnx_small_cnn.path, tmp_path / "bare", tmp_path / "out") == (
        f"error: {tmp_path / 'bare'}: 2 .bin file(s) but no dataset.json, so their dtype and shape are unknown")
    (tmp_path / "empty").mkdir()
    assert _refusal(capsys, onnx_small_cnn.path, tmp_path / "empty", tmp_path / "out") == (
        f"error: {tmp_path / 'empty'}: not a dump-bin dataset (no dataset.json, no .bin files)")


def test_misaligned_names_across_input_folders(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    contract = two_input_model(tmp_path / "model", "onnx")
    write_dataset(tmp_path / "bins", two_input_batches(2))
    document = json.loads((tmp_path / "bins" / "dataset.json").read_text())
    document["inputs"][1]["files"][1]["name"] = "000007.bin"
    (tmp_path / "bins" / "dataset.json").write_text(json.dumps(document))
    (tmp_path / "bins" / "b" / "000001.bin").rename(tmp_path / "bins" / "b" / "000007.bin")
    assert _refusal(capsys, contract.path, tmp_path / "bins", tmp_path / "out") == (
        f"error: {tmp_path / 'bins' / 'b' / '000001.bin'}: missing, while a/000001.bin exists "
        "(file names must match across input folders)")


def test_a_stray_bin_msame_would_feed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    contract = two_input_model(tmp_path / "model", "onnx")
    write_dataset(tmp_path / "bins", two_input_batches(2))
    shutil.copyfile(tmp_path / "bins" / "a" / "000000.bin", tmp_path / "bins" / "a" / "000000 (copy).bin")
    assert _refusal(capsys, contract.path, tmp_path / "bins", tmp_path / "out") == (
        f"error: {tmp_path / 'bins' / 'a' / '000000 (copy).bin'}: not listed in {tmp_path / 'bins' / 'dataset.json'} "
        "(msame and ais_bench would feed it with the others)")


def test_unwritable_output_folder(onnx_small_cnn: ModelContract, cnn_bins: DatasetManifest, tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    outcome = run_cli(capsys, "run", onnx_small_cnn.path, "--input", cnn_bins.root, "-o", blocker / "out")
    assert outcome.code == 2
    assert outcome.error_line == f"error: {blocker / 'out'}: cannot create the output folder here (Not a directory)"
    outcome = run_cli(capsys, "run", onnx_small_cnn.path, "--input", cnn_bins.root, "-o", blocker)
    assert outcome.error_line == f"error: {blocker}: exists and is not a folder"


@pytest.mark.slow
def test_msame_error_with_exit_0(om_small_cnn: ModelContract, cnn_bins: DatasetManifest, tmp_path: Path,
                                 monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    use_fake_tools(monkeypatch)
    monkeypatch.setenv("FAKE_MSAME_FAIL", "1")
    outcome = run_cli(capsys, "run", om_small_cnn.path, "--input", cnn_bins.root, "-o", tmp_path / "out")
    assert outcome.code == 2
    assert outcome.error_line == ("error: msame failed (exit 0): [ERROR] input file size is not equal to model "
                                  "input size")
    assert not load_run(tmp_path / "out").completed  # the attempt is on record, marked incomplete


def test_msame_missing(om_small_cnn: ModelContract, cnn_bins: DatasetManifest, tmp_path: Path,
                       monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    hide_tools(monkeypatch, tmp_path)
    assert _refusal(capsys, om_small_cnn.path, cnn_bins.root, tmp_path / "out") == (
        f"error: msame is not installed (not found on PATH); {STAND_IN}")


def test_backend_that_cannot_run_the_file(om_small_cnn: ModelContract, cnn_bins: DatasetManifest, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert om_small_cnn.converted_path is not None
    assert _refusal(capsys, om_small_cnn.converted_path, cnn_bins.root, tmp_path / "out", "--backend", "onnxrt") == (
        "error: --backend onnxrt cannot run a .om file (it takes msame or ais_bench)")
    assert _refusal(capsys, om_small_cnn.path, cnn_bins.root, tmp_path / "out", "--backend", "onnxrt") == (
        f"error: {om_small_cnn.path}: the onnxrt backend needs an ONNX model, convert produced om")


@pytest.mark.slow
def test_msame_outputs_are_read_with_the_oms_dtypes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """An om (and its contract) that says float16 where the tool writes float32: caught on the file, not passed on
    as garbage."""
    use_fake_tools(monkeypatch)
    contract = two_input_model(tmp_path / "model", "om")
    assert contract.converted is not None
    wrong = (contract.converted.outputs[0].with_dtype("float16"), contract.converted.outputs[1])
    om = write_om(tmp_path / "model" / "model.om", OmPlan(list(contract.converted.inputs), list(wrong)))
    contract = contract.with_converted(replace(contract.converted, outputs=wrong, sha256=sha256_file(om))).save()
    manifest = write_dataset(tmp_path / "bins", two_input_batches(1))
    outcome = run_cli(capsys, "run", contract.path, "--input", manifest.root, "-o", tmp_path / "out")
    work = load_run(tmp_path / "out").folder / ".msame-work"
    written = next(work.rglob("000000_output_0.bin"))
    assert outcome.error_line == (f"error: {written}: expected 12 bytes for shape (2,3) float16, got 24 "
                                  "(is it float32?)")


def test_golden_tf_run_widens_float16_bins_exactly_and_other_backends_refuse_them(
        frozen_small_cnn: ModelContract, onnx_small_cnn: ModelContract, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Bins made for an om that takes float16 also feed the frozen pb (float32): the cast is exact."""
    halves = [b.astype(np.float16) for b in cnn_batches(2)]
    half_bins = write_dataset(tmp_path / "half", {"images:0": halves})
    full_bins = write_dataset(tmp_path / "full", {"images:0": [h.astype(np.float32) for h in halves]})
    widened = run_model(frozen_small_cnn.path, half_bins.root, tmp_path / "a").record
    reference = run_model(frozen_small_cnn.path, full_bins.root, tmp_path / "b").record
    for stem in reference.stems:
        np.testing.assert_array_equal(widened.read_output(stem, 0), reference.read_output(stem, 0))
    assert _refusal(capsys, onnx_small_cnn.path, half_bins.root, tmp_path / "c") == (
        f"error: {tmp_path / 'half' / 'images'}: bins are float16, the model's input images:0 takes float32")
    wide = write_dataset(tmp_path / "wide", {"images:0": [h.astype(np.float64) for h in halves]})
    assert _refusal(capsys, frozen_small_cnn.path, wide.root, tmp_path / "d") == (
        f"error: {tmp_path / 'wide' / 'images'}: bins are float64, the model's input images:0 takes float32")


def test_a_model_argument_run_cannot_use(onnx_small_cnn: ModelContract, cnn_bins: DatasetManifest, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    assert onnx_small_cnn.converted_path is not None
    out = tmp_path / "out"
    assert _refusal(capsys, onnx_small_cnn.path, cnn_bins.root, out, "--backend", "trt") == (
        "error: --backend trt: expected one of onnxrt, tf, msame, ais_bench")
    assert _refusal(capsys, tmp_path / "model.tflite", cnn_bins.root, out) == (
        f"error: {tmp_path / 'model.tflite'}: not a model this runs (expected model.json, .om, .onnx or .pb)")
    missing = tmp_path / "model.om"
    assert _refusal(capsys, missing, cnn_bins.root, out) == f"error: {missing}: no such model"
    lone = tmp_path / "lone" / "model.onnx"
    lone.parent.mkdir()
    shutil.copyfile(onnx_small_cnn.converted_path, lone)
    assert _refusal(capsys, lone, cnn_bins.root, out) == (
        f"error: {lone}: no model.json beside it to say its inputs and outputs")
    other = onnx_small_cnn.folder / "other.onnx"
    shutil.copyfile(onnx_small_cnn.converted_path, other)
    try:
        assert _refusal(capsys, other, cnn_bins.root, out) == (
            f"error: {other}: {onnx_small_cnn.path} describes {onnx_small_cnn.converted_path.name}, not this file")
    finally:
        other.unlink()


def test_a_tf_run_reads_dataset_json_once(frozen_small_cnn: ModelContract, cnn_bins: DatasetManifest,
                                          tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The declared-preprocessing wrapper and the preflight share one read of dataset.json."""
    import binio.manifest

    real = binio.manifest.load_document
    read: list[Path] = []

    def counting(path: Path, **kwargs: Any) -> dict[str, Any]:  # passes the keywords through as they are
        read.append(Path(path))
        return real(path, **kwargs)

    monkeypatch.setattr(binio.manifest, "load_document", counting)
    result = run_model(frozen_small_cnn, cnn_bins.root, tmp_path / "out", RunOptions(backend="tf"))
    assert result.record.completed
    assert read == [cnn_bins.path]


def test_run_json_records_the_infer_that_wrote_it(tf_run: RunResult, tmp_path: Path) -> None:
    import infer

    written = json.loads((tf_run.folder / RUN_JSON).read_text())
    assert written["infer_version"] == infer.__version__
    assert load_run(tf_run.folder).infer_version == infer.__version__
    older = shutil.copytree(tf_run.folder, tmp_path / tf_run.folder.name)
    del written["infer_version"]  # every run.json records it: one without it is not infer's
    (older / RUN_JSON).write_text(json.dumps(written))
    with pytest.raises(RunRecordError, match=r"run\.json: missing field 'infer_version'"):
        load_run(older)
