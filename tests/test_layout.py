"""msame's output layout and both of its timestamp folder forms."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from binio.errors import InferError
from infer.run.layout import (
    newest_run_folder,
    output_file_name,
    parse_output_file_name,
    parse_timestamp_folder,
    timestamp_folder_name,
)


def test_output_file_names_round_trip() -> None:
    assert output_file_name("000003", 1) == "000003_output_1.bin"
    assert parse_output_file_name("000003_output_1.bin") == ("000003", 1)
    assert parse_output_file_name("my_image_output_12.bin") == ("my_image", 12)
    assert parse_output_file_name("000003_1.bin") is None


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("20240101_120000", datetime(2024, 1, 1, 12, 0, 0)),
        ("20241231_235959_000042", datetime(2024, 12, 31, 23, 59, 59, 42)),
        ("202431_9_5_7_123", datetime(2024, 3, 1, 9, 5, 7, 123)),
        ("2024123_1_2_3_45", datetime(2024, 12, 3, 1, 2, 3, 45)),
        ("2024111_9_5_7_123", datetime(2024, 11, 1, 9, 5, 7, 123)),
    ],
)
def test_both_msame_timestamp_forms_parse(name: str, expected: datetime) -> None:
    assert parse_timestamp_folder(name) == expected


def test_non_timestamps_are_not_parsed() -> None:
    assert parse_timestamp_folder("images") is None
    assert parse_timestamp_folder("2024_01_01-12_00_00") is None


def test_our_folder_name_parses_back() -> None:
    when = datetime(2026, 2, 3, 4, 5, 6, 789)
    assert parse_timestamp_folder(timestamp_folder_name(when)) == when


def test_newest_folder_wins_across_forms(tmp_path: Path) -> None:
    for name in ("20240101_120000", "2024111_9_5_7_1", "2024103_23_59_59_999999", "notes"):
        (tmp_path / name).mkdir()
    assert newest_run_folder(tmp_path).name == "2024111_9_5_7_1"


def test_newest_folder_errors_name_the_folder(tmp_path: Path) -> None:
    with pytest.raises(InferError, match=r"no timestamp folder inside"):
        newest_run_folder(tmp_path)
    with pytest.raises(InferError, match=r"missing: no such output folder"):
        newest_run_folder(tmp_path / "missing")
