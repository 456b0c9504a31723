"""compare reads infer's own run folders by the dataset's stems: it never lists them (issue 42: a run of 50,000
batches listed as paths and parsed file names was 30 MB of compare's peak, and a second of its start)."""

from __future__ import annotations

from pathlib import Path

import pytest

from binio.manifest import DatasetManifest
from infer.compare._compare import CompareOptions, compare
from infer.compare._sides import tool_outputs
from infer.compare._sides.golden import tensorflow_golden
from infer.contract import ModelContract
from infer.run import run_model
from tests.infer.scale_data import scale_bins


@pytest.fixture(scope="module")
def bins(tmp_path_factory: pytest.TempPathFactory) -> DatasetManifest:
    return scale_bins(tmp_path_factory.mktemp("unlisted_bins"))


@pytest.fixture
def listed(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The folders compare lists, in order."""
    folders: list[Path] = []
    listing = tool_outputs._listing

    def recorded(folder: Path) -> list[Path]:
        folders.append(Path(folder))
        return listing(folder)

    monkeypatch.setattr(tool_outputs, "_listing", recorded)
    return folders


def test_infer_run_folders_are_read_by_stem_not_listed(onnx_small_cnn: ModelContract, bins: DatasetManifest,
                                                       tmp_path: Path, listed: list[Path]) -> None:
    golden, _ = tensorflow_golden(onnx_small_cnn, bins, cache_root=tmp_path / "cache")
    actual = run_model(onnx_small_cnn.path, bins.root, tmp_path / "actual").folder
    result = compare(onnx_small_cnn.path, bins.root, actual, golden=golden, options=CompareOptions())
    assert result.passed and len(result.outputs[0].batches) == bins.file_count
    assert actual not in listed and golden not in listed, listed


def test_a_folder_msame_wrote_alone_is_still_listed_and_matched(onnx_small_cnn: ModelContract,
                                                                bins: DatasetManifest, tmp_path: Path,
                                                                listed: list[Path]) -> None:
    """The guard above can fail: without run.json the same files are a tool's, found by listing the folder."""
    golden, _ = tensorflow_golden(onnx_small_cnn, bins, cache_root=tmp_path / "cache")
    actual = run_model(onnx_small_cnn.path, bins.root, tmp_path / "actual").folder
    (actual / "run.json").unlink()
    result = compare(onnx_small_cnn.path, bins.root, actual, golden=golden, options=CompareOptions())
    assert result.passed and actual in listed
