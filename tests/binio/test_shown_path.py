"""shown_path: relative under the current folder, absolute elsewhere, lexically."""

from __future__ import annotations

from pathlib import Path

import pytest

from binio.shown_path import shown_path, shown_paths


def test_under_the_current_folder_relative_elsewhere_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "here").mkdir()
    monkeypatch.chdir(tmp_path / "here")
    assert shown_path(tmp_path / "here" / "out" / "report.html") == "out/report.html"
    assert shown_path("out/report.html") == "out/report.html"
    assert shown_path(tmp_path / "here") == "."
    assert shown_path(tmp_path / "elsewhere" / "x") == str(tmp_path / "elsewhere" / "x")
    assert shown_path("../elsewhere/x") == str(tmp_path / "elsewhere" / "x")  # never ../: absolute outside


def test_a_link_is_not_resolved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "data").symlink_to(tmp_path / "data")
    monkeypatch.chdir(tmp_path / "work")
    assert shown_path(tmp_path / "work" / "data" / "a.bin") == "data/a.bin"  # the name the user gave


def test_paths_inside_a_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    line = f"run  0.1s  onnxrt: 60 samples -> {tmp_path}/work/out/1 (and /opt/x; ({tmp_path}/a.txt), ratio 1/2)"
    assert shown_paths(line) == "run  0.1s  onnxrt: 60 samples -> work/out/1 (and /opt/x; (a.txt), ratio 1/2)"
