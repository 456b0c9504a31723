"""`infer.run.run_model`, the one entry of `infer run`: sharded when ScaleOptions ask for it, plain otherwise, the same
bytes either way; no caller outside infer/run chooses between the two paths."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from binio.manifest import DatasetManifest
from infer.contract import ModelContract
from infer.run import run_model
from infer.run._runners.base import RunnerError
from infer.run.options import RunOptions, ScaleOptions
from infer.run.record import load_run
from tests.infer.run_data import as_om, hide_tools
from tests.infer.scale_data import assert_same_outputs, scale_bins

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bins(tmp_path_factory: pytest.TempPathFactory) -> DatasetManifest:
    return scale_bins(tmp_path_factory.mktemp("entry_bins"))


@pytest.mark.slow
def test_run_over_two_devices_writes_the_bytes_of_a_plain_run(onnx_small_cnn: ModelContract, bins: DatasetManifest,
                                                              tmp_path: Path) -> None:
    plain = run_model(onnx_small_cnn.path, bins.root, tmp_path / "plain")
    sharded = run_model(onnx_small_cnn.path, bins.root, tmp_path / "sharded", RunOptions(),
                        ScaleOptions(devices=(0, 1)))
    assert plain and sharded
    assert_same_outputs(plain.folder, sharded.folder)
    assert plain.record.scale_out is None and load_run(plain.folder).scale_out is None
    scaled = load_run(sharded.folder).scale_out
    assert scaled is not None and (scaled.engine, scaled.shard_count, scaled.failed) == ("local", 2, ())
    assert (sharded.record.stems, sharded.record.rows, sharded.record.outputs) == (
        plain.record.stems, plain.record.rows, plain.record.outputs)


def test_scale_options_that_ask_for_no_shards_give_a_plain_run(onnx_small_cnn: ModelContract,
                                                               bins: DatasetManifest, tmp_path: Path) -> None:
    result = run_model(onnx_small_cnn, bins, tmp_path, RunOptions(threads=1), ScaleOptions(retries=3))
    record = load_run(result.folder)
    assert record.completed and record.scale_out is None
    assert (record.device, record.threads) == ("CPUExecutionProvider", 1)  # the runner's own, not "local engine"


def test_a_bad_scale_option_is_refused_where_no_shard_is_asked_for(onnx_small_cnn: ModelContract,
                                                                   bins: DatasetManifest, tmp_path: Path) -> None:
    from infer.run.options import ScaleOutError

    with pytest.raises(ScaleOutError, match=r"--retries -3: expected 0 or more"):
        run_model(onnx_small_cnn, bins, tmp_path / "out", RunOptions(), ScaleOptions(retries=-3))
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_a_resume_goes_to_the_sharded_path_which_finds_the_run_complete(onnx_small_cnn: ModelContract,
                                                                        bins: DatasetManifest,
                                                                        tmp_path: Path) -> None:
    first = run_model(onnx_small_cnn.path, bins.root, tmp_path, RunOptions(), ScaleOptions(devices=(0, 1)))
    again = run_model(onnx_small_cnn.path, bins.root, tmp_path, RunOptions(), ScaleOptions(resume=True))
    assert again.folder == first.folder and list(tmp_path.iterdir()) == [first.folder]  # a plain run adds one


def test_a_sharded_run_refuses_a_missing_tool_before_any_folder_exists(onnx_small_cnn: ModelContract,
                                                                       bins: DatasetManifest, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    om = as_om(onnx_small_cnn, tmp_path / "om")
    hide_tools(monkeypatch, tmp_path)
    with pytest.raises(RunnerError, match=r"^msame is not installed \(not found on PATH\)"):
        run_model(om.path, bins.root, tmp_path / "out", RunOptions(backend="msame"), ScaleOptions(devices=(0, 1)))
    assert not (tmp_path / "out").exists()


def _imported_names(path: Path) -> set[tuple[str, str]]:
    return {(node.module or "", alias.name) for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.ImportFrom) for alias in node.names}


@pytest.mark.slow
def test_no_caller_outside_the_run_package_chooses_between_the_two_paths() -> None:
    """The command line, the pipeline, compare and tune import the entry; the two paths only infer/run uses
    (and the API, which exports them)."""
    paths = {("infer.run._plain", "run_plain"), ("infer.run._sharded", "run_sharded")}
    choosing = sorted(path.relative_to(ROOT).as_posix() for path in (ROOT / "infer").rglob("*.py")
                      if (ROOT / "infer" / "run") not in path.parents and path != ROOT / "infer" / "__init__.py"
                      and _imported_names(path) & paths)
    assert choosing == []
    callers = ("cli/run.py", "pipeline/_stages.py", "compare/_sides/golden.py", "compare/_judge/expected.py",
               "tune/_trial.py")
    assert all(("infer.run", "run_model") in _imported_names(ROOT / "infer" / caller) for caller in callers)
