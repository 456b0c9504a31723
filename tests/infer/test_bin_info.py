"""`infer bin-info`: stats of a dataset or a single bin, --verify, --to-npy, and bare bins sized by --dtype/--shape."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from infer.contract import ModelContract
from tests.cli import run_cli


@pytest.fixture
def dataset(capsys: pytest.CaptureFixture[str], frozen_small_cnn: ModelContract, tmp_path: Path) -> tuple[Path,
                                                                                                        np.ndarray]:
    data = np.arange(5 * 8 * 8 * 3, dtype=np.float32).reshape(5, 8, 8, 3)
    data[1, 0, 0, 0] = np.nan
    np.save(tmp_path / "data.npy", data)
    result = run_cli(capsys, "dump-bin", "-m", frozen_small_cnn.path, "-o", tmp_path / "bins", tmp_path / "data.npy",
                     "--allow-lossy")
    assert result.code == 0, result.err
    return tmp_path / "bins", data


def test_dataset_summary_excludes_padding_and_counts_nan(capsys: pytest.CaptureFixture[str],
                                                         dataset: tuple[Path, np.ndarray]) -> None:
    root, data = dataset
    result = run_cli(capsys, "bin-info", root, "--json")
    assert result.code == 0, result.err
    (row,) = json.loads(result.out)["rows"]
    finite = data[np.isfinite(data)]
    assert row["label"] == "images:0 (3 files, 5 samples + 1 padding)"
    assert (row["nan"], row["inf"], row["shape"], row["dtype"]) == (1, 0, [2, 8, 8, 3], "float32")
    assert (row["min"], row["max"]) == (float(finite.min()), float(finite.max()))
    assert row["mean"] == pytest.approx(float(finite.mean(dtype=np.float64)))


def test_per_file_lines_and_verify(capsys: pytest.CaptureFixture[str], dataset: tuple[Path, np.ndarray]) -> None:
    root, _ = dataset
    result = run_cli(capsys, "bin-info", root, "--per-file", "--verify")
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[1].startswith("  images/000000.bin (2 rows)  float32(2,8,8,3)  min 0  max 383")
    assert lines[1].endswith("nan 1  inf 0  !! 1 NaN, 0 inf")  # sample 1 holds the NaN
    assert lines[2] == "  images/000001.bin (2 rows)  float32(2,8,8,3)  min 384  max 767  mean 575.5  nan 0  inf 0"
    assert lines[3].startswith("  images/000002.bin (1 row, 1 padding)")
    assert lines[-1] == "verified: 3 file(s), sizes and digests match the manifest"


def test_verify_names_a_changed_file(capsys: pytest.CaptureFixture[str], dataset: tuple[Path, np.ndarray]) -> None:
    root, _ = dataset
    changed = root / "images" / "000001.bin"
    changed.write_bytes(bytes(changed.stat().st_size))
    assert run_cli(capsys, "bin-info", root).code == 0  # sizes still fit: only --verify reads the hashes
    result = run_cli(capsys, "bin-info", root, "--verify")
    assert result.code == 2
    assert result.error_line == (f"error: 1 of 3 files fail verification; first: {changed}: xxh128 differs from "
                                 f"dataset.json's (the file changed after dump-bin)")


def test_verify_reads_each_file_once_and_tells_how_far_it_is(dataset: tuple[Path, np.ndarray],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 42: --verify checked each file's digest, then read it again for its statistics; now the digest is of
    the bytes the statistics are taken of, and the progress is heard from the first file."""
    import binio.binfile
    from infer.bin_info import BinInfoOptions, describe_path

    root, _ = dataset
    opened: list[str] = []
    real_open = binio.binfile.os.open
    def counted_open(path: str, *args: Any) -> int:
        opened.append(str(path))
        return real_open(path, *args)

    monkeypatch.setattr(binio.binfile.os, "open", counted_open)
    heard: list[tuple[int, int]] = []
    report = describe_path(root, BinInfoOptions(verify=True), progress=lambda done, total: heard.append((done, total)))
    assert report.verified == 3 and heard == [(1, 3), (2, 3), (3, 3)]
    assert sorted(opened) == sorted(str(p) for p in (root / "images").glob("*.bin"))  # each once


def test_a_truncated_file_in_a_dataset_is_refused(capsys: pytest.CaptureFixture[str],
                                                  dataset: tuple[Path, np.ndarray]) -> None:
    root, _ = dataset
    truncated = root / "images" / "000002.bin"
    truncated.write_bytes(truncated.read_bytes()[:768])
    result = run_cli(capsys, "bin-info", root)
    assert result.error_line == (f"error: {truncated}: expected 1536 bytes for shape (2,8,8,3) float32, got 768 "
                                 f"(is it float16?)")


def test_to_npy_exports_the_real_rows(capsys: pytest.CaptureFixture[str], dataset: tuple[Path, np.ndarray],
                                      tmp_path: Path) -> None:
    root, data = dataset
    result = run_cli(capsys, "bin-info", root, "--to-npy", tmp_path / "export")
    assert result.code == 0, result.err
    np.testing.assert_array_equal(np.load(tmp_path / "export" / "images.npy"), data)
    again = run_cli(capsys, "bin-info", root, "--to-npy", tmp_path / "export")
    assert again.error_line == f"error: {tmp_path / 'export' / 'images.npy'}: exists already"


def test_a_bin_inside_a_dataset_uses_its_manifest(capsys: pytest.CaptureFixture[str],
                                                  dataset: tuple[Path, np.ndarray], tmp_path: Path) -> None:
    root, data = dataset
    result = run_cli(capsys, "bin-info", root / "images" / "000002.bin", "--verify", "--to-npy", tmp_path / "x.npy")
    assert result.code == 0, result.err
    assert result.out.splitlines()[0] == (f"{root / 'images' / '000002.bin'}: float32 (2,8,8,3), listed in "
                                          f"{root / 'dataset.json'}")
    np.testing.assert_array_equal(np.load(tmp_path / "x.npy"), data[4:5])


def test_a_bare_bin_needs_dtype_and_shape(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "input.bin"
    np.arange(6, dtype=np.float16).tofile(path)
    result = run_cli(capsys, "bin-info", path)
    assert result.error_line == f"error: {path}: no dataset.json lists this file, so its dtype and shape are unknown"
    half = run_cli(capsys, "bin-info", path, "--dtype", "float16")
    assert half.error_line == (f"error: {path}: no dataset.json lists this file, so its dtype and shape are unknown "
                               "(--shape missing)")
    unknown = run_cli(capsys, "bin-info", path, "--dtype", "half-float", "--shape", "2,3")
    assert unknown.error_line.startswith("error: --dtype 'half-float': unknown dtype: expected one of float16,")
    wrong = run_cli(capsys, "bin-info", path, "--dtype", "float32", "--shape", "2,3")
    assert wrong.error_line == f"error: {path}: expected 24 bytes for shape (2,3) float32, got 12 (is it float16?)"
    right = run_cli(capsys, "bin-info", path, "--dtype", "float16", "--shape", "2,3", "--json")
    assert right.code == 0, right.err
    (row,) = json.loads(right.out)["rows"]
    assert (row["min"], row["max"], row["mean"], row["shape"]) == (0.0, 5.0, 2.5, [2, 3])


def test_a_missing_path_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    result = run_cli(capsys, "bin-info", tmp_path / "nothing")
    assert result.error_line == f"error: {tmp_path / 'nothing'}: no such file or folder"


def test_bin_info_option_mistakes(capsys: pytest.CaptureFixture[str], dataset: tuple[Path, np.ndarray],
                                  tmp_path: Path) -> None:
    root, _ = dataset
    (tmp_path / "export.npy").write_text("a file")
    outcome = run_cli(capsys, "bin-info", root, "--to-npy", tmp_path / "export.npy")
    assert outcome.error_line == (f"error: {tmp_path / 'export.npy'}: exists and is not a folder (a dataset exports "
                                  "one .npy per input)")
    bare = tmp_path / "bare.bin"
    np.zeros(6, np.float32).tofile(bare)
    outcome = run_cli(capsys, "bin-info", bare, "--dtype", "float32", "--shape", "?,3")
    assert outcome.error_line == "error: --shape ?,3: every dim must be known, found (?,3)"
    outcome = run_cli(capsys, "bin-info", bare, "--dtype", "float32", "--shape", "2,3", "--verify")
    assert outcome.error_line == (f"error: --verify: {bare} is in no dataset.json, so there is no digest to check it "
                                  "against (its size was checked: 24 bytes for (2,3) float32)")
    outcome = run_cli(capsys, "bin-info", root, "--dtype", "float16")
    assert outcome.error_line == (f"error: {root}: --dtype and --shape are for a bare .bin; a dataset's dataset.json "
                                  "gives every input's dtype and shape")
    outcome = run_cli(capsys, "bin-info", root / "nothing-here")
    assert (outcome.code, outcome.error_line) == (2, f"error: {root / 'nothing-here'}: no such file or folder")
