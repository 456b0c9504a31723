"""A bin changed after dump-bin but kept at its size is caught by run and compare (its sha256 is in dataset.json);
what compare can refuse is refused before the golden run, not after it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from binio.manifest import DatasetManifest
from infer.compare._compare import CompareOptions, compare
from infer.contract import ModelContract
from infer.run import run_model
from infer.run.layout import RUN_JSON
from infer.run.options import RunOptions
from infer.run.record import load_run
from tests.builders.bins import write_dataset
from tests.cli import run_cli
from tests.infer.run_data import as_om, cnn_batches, use_fake_tools


def _change_keeping_size(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[0] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.fixture
def bins(tmp_path: Path) -> DatasetManifest:
    return write_dataset(tmp_path / "bins", {"images:0": cnn_batches(3)}, layout="NHWC")


def test_run_refuses_a_bin_changed_after_dump_bin_and_leaves_the_run_incomplete(
        onnx_small_cnn: ModelContract, bins: DatasetManifest, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    changed = bins.root / "images" / "000001.bin"
    _change_keeping_size(changed)
    result = run_cli(capsys, "run", onnx_small_cnn.path, "--input", bins.root, "-o", tmp_path / "out")
    assert result.code == 2
    assert result.error_line == (f"error: {changed}: xxh128 differs from dataset.json's (the file changed after "
                                 f"dump-bin)")
    (folder,) = (tmp_path / "out").iterdir()
    record = load_run(folder)
    # Checked on the bytes fed, as each batch is read: the run stops there, with the batch before it kept.
    assert not record.completed and record.stems == ("000000",)
    assert sorted(p.name for p in folder.glob("*_output_*.bin")) == ["000000_output_0.bin"]


@pytest.mark.slow
def test_a_tool_run_refuses_it_too_and_moves_no_output(onnx_small_cnn: ModelContract, bins: DatasetManifest,
                                                       tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from binio.errors import BinFileError

    use_fake_tools(monkeypatch)
    om = as_om(onnx_small_cnn, tmp_path / "om")
    _change_keeping_size(bins.root / "images" / "000002.bin")
    with pytest.raises(BinFileError, match=r"000002\.bin: xxh128 differs"):
        run_model(om.path, bins.root, tmp_path / "out", RunOptions(backend="msame"))
    (folder,) = (tmp_path / "out").iterdir()
    assert not list(folder.glob("*_output_*.bin")) and not load_run(folder).completed


def test_compare_refuses_a_bin_changed_after_the_runs(onnx_small_cnn: ModelContract, bins: DatasetManifest,
                                                      tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    actual = run_model(onnx_small_cnn.path, bins.root, tmp_path / "a").folder
    golden = run_model(onnx_small_cnn.path, bins.root, tmp_path / "g", RunOptions(backend="tf")).folder
    assert run_cli(capsys, "compare", onnx_small_cnn.path, "--input", bins.root, "--actual", actual,
                   "--golden", golden).code == 0
    changed = bins.root / "images" / "000000.bin"
    _change_keeping_size(changed)
    result = run_cli(capsys, "compare", onnx_small_cnn.path, "--input", bins.root, "--actual", actual, "--golden",
                     golden)
    assert result.code == 2
    assert result.error_line == (f"error: {changed}: xxh128 differs from dataset.json's (the file changed after "
                                 f"dump-bin)")


def _golden_runs(contract: ModelContract, bins: DatasetManifest, actual: Path, tmp_path: Path, **kwargs: Any
                 ) -> list[str]:
    """Runs compare with a golden run to make; returns whether it started, and the refusal."""
    from binio.errors import InferError

    heard: list[str] = []
    try:
        compare(contract.path, bins.root, actual, options=CompareOptions(**kwargs), cache_root=tmp_path / "cache",
                on_golden_run=lambda: heard.append("golden run"))
    except InferError as exc:
        heard.append(exc.message)
    return heard


def test_an_incomplete_actual_is_refused_before_the_golden_run(onnx_small_cnn: ModelContract, bins: DatasetManifest,
                                                               tmp_path: Path) -> None:
    actual = run_model(onnx_small_cnn.path, bins.root, tmp_path / "a").folder
    record = json.loads((actual / RUN_JSON).read_text())
    (actual / RUN_JSON).write_text(json.dumps({**record, "completed": False}))
    assert _golden_runs(onnx_small_cnn, bins, actual, tmp_path) == [
        f"--actual {actual}: the run did not complete (run.json says so)"]
    (actual / RUN_JSON).write_text(json.dumps(record))
    (actual / "000002_output_0.bin").unlink()
    heard = _golden_runs(onnx_small_cnn, bins, actual, tmp_path)
    assert heard == [f"{actual / '000002_output_0.bin'}: missing: the dataset has batch 000002 and the model has "
                     f"output 0 (probs:0)"]


@pytest.mark.slow
def test_layerwise_on_an_om_is_refused_before_the_golden_run(onnx_small_cnn: ModelContract, bins: DatasetManifest,
                                                             tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_fake_tools(monkeypatch)
    om = as_om(onnx_small_cnn, tmp_path / "om")
    actual = run_model(om.path, bins.root, tmp_path / "a").folder
    heard = _golden_runs(om, bins, actual, tmp_path, layerwise=True)
    assert len(heard) == 1 and heard[0].startswith(f"--layerwise: {om.path} is converted to om; ")
