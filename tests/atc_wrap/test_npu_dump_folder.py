"""Dump file names in the forms CANN writes them, and a dump folder's layout
`{dump_path}/{time}/{device}/{model_name}/{model_id}/{step}/` walked without reading the files."""

from __future__ import annotations

from pathlib import Path

import pytest

from atc_wrap.ascend_files.errors import NpuDumpError
from atc_wrap.ascend_files.npu_dump import DumpFileName, DumpLocation, parse_dump_file_name, walk_dump_folder


@pytest.mark.parametrize(("name", "parsed"), [
    ("Conv2D.scope_conv_Conv2D.3.2.1700000000000001", DumpFileName("Conv2D", "scope_conv_Conv2D", 3, 2,
                                                                   1700000000000001, ())),
    ("Relu.relu.12.1700000000000002", DumpFileName("Relu", "relu", 12, None, 1700000000000002, ())),
    ("MatMulV2.dense_MatMul.1.45.1700000000000003.0.0.0.0",
     DumpFileName("MatMulV2", "dense_MatMul", 45, 1, 1700000000000003, (0, 0, 0, 0))),
    ("Add.add-1.7.1700000000000004.2.3.4.5", DumpFileName("Add", "add-1", 7, None, 1700000000000004, (2, 3, 4, 5))),
])
def test_dump_file_names_are_parsed(name: str, parsed: DumpFileName) -> None:
    assert parse_dump_file_name(name) == parsed


@pytest.mark.parametrize("name", ["mapping.csv", "conv.0.1700000000000001.npy",
                                  "Conv2D.conv.x.1700000000000001", "a.b.c.d.e.f", "Conv2D.c v.1.1700000000000001"])
def test_other_names_are_not_dump_files(name: str) -> None:
    assert parse_dump_file_name(name) is None


def test_a_dump_folder_is_walked_in_order_with_each_files_place(tmp_path: Path) -> None:
    step = tmp_path / "20240101120000" / "0" / "sample" / "1" / "0"
    step.mkdir(parents=True)
    for name in ("Relu.relu.2.1700000000000009", "Conv2D.conv.1.1700000000000005", "mapping.csv"):
        (step / name).write_bytes(b"")
    folder = walk_dump_folder(tmp_path)
    assert [entry.name.op_name for entry in folder.entries] == ["conv", "relu"]
    assert folder.entries[0].location == DumpLocation("20240101120000", "0", "sample", "1", "0")
    assert folder.skipped == (step / "mapping.csv",)
    inner = walk_dump_folder(step.parent)
    assert inner.entries[0].location == DumpLocation("20240101120000", "0", "sample", "1", "0")
    below = walk_dump_folder(step)
    assert below.entries[0].location == DumpLocation("20240101120000", "0", "sample", "1", "0")


def test_without_a_time_folder_the_innermost_folders_are_the_innermost_levels(tmp_path: Path) -> None:
    step = tmp_path / "dumps" / "0" / "sample" / "1" / "0"
    step.mkdir(parents=True)
    (step / "Add.add.1.1700000000000001").write_bytes(b"")
    (entry,) = walk_dump_folder(tmp_path / "dumps" / "0").entries
    assert entry.location == DumpLocation("", "", "sample", "1", "0")


def test_a_single_op_dump_stops_at_the_device(tmp_path: Path) -> None:
    device = tmp_path / "20240101120000" / "3"
    device.mkdir(parents=True)
    (device / "Add.add.1.1700000000000001").write_bytes(b"")
    (entry,) = walk_dump_folder(tmp_path).entries
    assert entry.location == DumpLocation("20240101120000", "3", "", "", "")


def test_a_file_is_not_a_dump_folder(tmp_path: Path) -> None:
    file = tmp_path / "x"
    file.write_bytes(b"")
    with pytest.raises(NpuDumpError, match="expected a dump folder, found a file"):
        walk_dump_folder(file)
