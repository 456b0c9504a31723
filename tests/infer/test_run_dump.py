"""`infer run --dump`: the acl.json each tool is handed, one batch dumped beside the run's outputs, run.json's record
of it. The tools are the fakes (tests/fakes), which dump as GE does what the acl.json they are given asks for, from
the om tests/npu_models.py writes, with the test's own dump writer."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from atc_wrap.ascend_files.npu_dump import read_npu_dump, walk_dump_folder
from infer.contract import ModelContract
from infer.run import RunError, RunOptions, ScaleOptions, run_model
from infer.run.record import RunRecordError, load_run
from tests.builders.bins import write_dataset
from tests.cli import run_cli
from tests.infer.run_data import use_fake_tools
from tests.npu_models import npu_model

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> ModelContract:
    return npu_model(tmp_path_factory.mktemp("npu") / "model")


def _bins(folder: Path, count: int = 2) -> tuple[Path, list[np.ndarray]]:
    rng = np.random.default_rng(5)
    batches = [rng.standard_normal((2, 8, 8, 3)).astype(np.float32) for _ in range(count)]
    return write_dataset(folder, {"x:0": batches}).root, batches


def _dump_files(folder: Path) -> dict[str, Path]:
    return {entry.name.op_name: entry.path for entry in walk_dump_folder(folder).entries}


def test_msame_dumps_one_batch_from_the_acl_json_in_the_folder_it_runs_in(
        model: ModelContract, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_fake_tools(monkeypatch)
    bins, batches = _bins(tmp_path / "bins")
    run = run_model(model.path, bins, tmp_path / "out", RunOptions(backend="msame", dump=True, dump_batch="000001"))
    record = load_run(run.folder)
    assert record.completed and record.stems == ("000000", "000001") and record.dump is not None
    dump = record.dump
    assert (dump.folder, dump.mode, dump.stem, dump.model_name) == ("dump", "output", "000001", "model")
    assert json.loads((run.folder / dump.acl_json).read_text()) == {"dump": {
        "dump_list": [{"model_name": "model"}], "dump_path": str((run.folder / "dump").resolve()),
        "dump_mode": "output"}}
    # msame is not given --dump (its own acl.json would be output-only): it reads ./acl.json where it runs
    assert "--dump" not in dump.tool_command and "--loop" not in dump.tool_command
    [step] = dump.step_folders
    time, device, name, model_id, index = step.split("/")
    assert (len(time), device, name, model_id, index) == (14, "0", "model", "1", "0")  # one execution: step 0
    files = _dump_files(run.folder / "dump")
    assert dump.files == len(files) and "conv_Conv2D" in files and "dense_MatMul" in files
    # the dumped batch is the one asked for: ATC's first TransData holds the input, in NC1HWC0
    transdata = read_npu_dump(files["trans_TransData_0"])
    (out,) = transdata.outputs
    assert out.format == "NC1HWC0" and not transdata.inputs  # dump_mode output
    nhwc = out.origin_array("NHWC", (2, 8, 8, 3))
    assert np.array_equal(nhwc, batches[1].astype(np.float16))
    assert not (run.folder / ".msame-dump-work").exists()
    assert set(json.loads((run.folder / "run.json").read_text())["dump"]) == _documented_dump_keys()


def _documented_dump_keys() -> set[str]:
    """The keys docs/contracts.md lists for run.json's `dump`."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "contracts.md").read_text()
    table = text.split("\n`dump` (", 1)[1].split("| key | meaning |", 1)[1].split("\n\n", 1)[0]
    return {row.split("`")[1] for row in table.splitlines() if row.startswith("| `")}


def test_ais_bench_takes_the_acl_json_by_its_flag_with_no_warm_up_run(
        model: ModelContract, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_fake_tools(monkeypatch)
    bins, _ = _bins(tmp_path / "bins")
    run = run_model(model.path, bins, tmp_path / "out", RunOptions(backend="ais_bench", dump=True, dump_mode="all"))
    dump = load_run(run.folder).dump
    assert dump is not None and dump.stem == "000000" and dump.mode == "all"
    command = list(dump.tool_command)
    assert command[command.index("--acl_json_path") + 1] == str(run.folder.resolve() / "dump" / "acl.json")
    # ais_bench warms up once by default, and a warm-up run is an execution the dump would hold
    assert command[command.index("--warmup_count") + 1] == "0"
    assert len(dump.step_folders) == 1
    conv = read_npu_dump(_dump_files(run.folder / "dump")["conv_Conv2D"])
    assert [t.format for t in conv.inputs] == ["NC1HWC0"] and [t.format for t in conv.outputs] == ["NC1HWC0"]


def test_run_dump_from_the_command_line_is_recorded_and_the_outputs_are_the_runs(
        model: ModelContract, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    use_fake_tools(monkeypatch)
    bins, _ = _bins(tmp_path / "bins", count=3)
    run_cli(capsys, "run", model.path, "--input", bins, "-o", tmp_path / "out", "--dump", "--dump-mode", "input")
    record = load_run(next((tmp_path / "out").iterdir()))
    assert record.stems == ("000000", "000001", "000002") and record.dump is not None
    assert record.dump.mode == "input"
    assert all(record.output_path(stem, 0).is_file() for stem in record.stems)
    dense = read_npu_dump(_dump_files(record.folder / "dump")["dense_MatMul"])
    assert not dense.outputs and [t.format for t in dense.inputs] == ["ND"]


def test_a_tool_that_dumps_nothing_is_refused_with_the_model_name_it_was_given(
        model: ModelContract, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """GE dumps only the model acl.json's dump_list names: one named otherwise leaves an empty dump folder."""
    use_fake_tools(monkeypatch)
    monkeypatch.setattr("infer.run._dump.dump_model_name", lambda om: "another_model")
    bins, _ = _bins(tmp_path / "bins")
    with pytest.raises(RunError, match=r"^msame wrote no dump file under .*/dump for batch 000000$") as refused:
        run_model(model.path, bins, tmp_path / "out", RunOptions(backend="msame", dump=True))
    assert "dump_list model_name 'another_model'" in (refused.value.hint or "")


def test_dump_options_are_refused_where_they_cannot_apply(model: ModelContract, tmp_path: Path) -> None:
    bins, _ = _bins(tmp_path / "bins")
    with pytest.raises(RunError, match=r"^--dump-mode everything: expected one of output, input, all$"):
        RunOptions(dump=True, dump_mode="everything").check()  # type: ignore[arg-type]  # refused
    with pytest.raises(RunError, match=r"^--dump-batch without --dump: nothing is dumped$"):
        RunOptions(dump_batch="000001").check()
    with pytest.raises(RunError, match=r"^--dump with --backend tf: an NPU dump comes from msame or ais_bench"):
        run_model(model.path, bins, tmp_path / "out", RunOptions(backend="tf", dump=True))
    with pytest.raises(RunError, match=r"^--dump with shards: the dump is of one batch, run once$"):
        run_model(model.path, bins, tmp_path / "out", RunOptions(backend="msame", dump=True), ScaleOptions(shards=2))


def test_dump_batch_the_dataset_lacks_is_refused_before_the_tool_runs(
        model: ModelContract, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_fake_tools(monkeypatch)
    bins, _ = _bins(tmp_path / "bins")
    with pytest.raises(RunError, match=r"^--dump-batch 000007: .*dataset.json has no such batch \(its batches are "
                                       r"000000 to 000001\)$"):
        run_model(model.path, bins, tmp_path / "out", RunOptions(backend="msame", dump=True, dump_batch="000007"))


def test_a_malformed_dump_record_in_run_json_is_refused_in_one_line(
        model: ModelContract, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_fake_tools(monkeypatch)
    bins, _ = _bins(tmp_path / "bins")
    run = run_model(model.path, bins, tmp_path / "out", RunOptions(backend="msame", dump=True))
    path = run.folder / "run.json"
    data = json.loads(path.read_text())
    data["dump"]["mode"] = "everything"
    path.write_text(json.dumps(data))
    with pytest.raises(RunRecordError, match=r"run.json: dump.mode: expected one of output, input, all, found "
                                             r"'everything'$"):
        load_run(run.folder)
    data["dump"]["mode"], data["dump"]["folder"] = "output", "../elsewhere"
    path.write_text(json.dumps(data))
    with pytest.raises(RunRecordError, match=r"dump.folder '../elsewhere': '..' leaves the folder"):
        load_run(run.folder)
