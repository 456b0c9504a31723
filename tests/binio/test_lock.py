"""binio.lock.folder_lock: the one place an output folder that is a file is refused, for every writer."""

from __future__ import annotations

from pathlib import Path

import pytest

from binio.errors import OutputExistsError
from binio.lock import folder_lock
from binio.output import LOCK_NAME, check_output


def test_a_file_where_the_folder_goes_is_refused_by_the_lock(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(OutputExistsError) as refused, folder_lock(blocker, command="any writer"):
        pass
    assert str(refused.value) == f"{blocker}: exists and is not a folder"
    assert refused.value.hint == "choose another output folder"
    assert blocker.read_text() == "not a folder"


def test_the_lock_creates_the_folder_and_removes_it_when_nothing_was_written(tmp_path: Path) -> None:
    with folder_lock(tmp_path / "new", command="any writer") as folder:
        assert folder.is_dir()
    assert not (tmp_path / "new").exists()


def test_the_existing_output_refusal_says_what_wrote_it(tmp_path: Path) -> None:
    earlier = tmp_path / "tune.json"
    earlier.write_text("{}")
    with pytest.raises(OutputExistsError, match=r"tune\.json: exists already \(an earlier tune-precision\)$"):
        check_output(earlier, force=False, what="an earlier tune-precision")
    assert check_output(earlier, force=True, what="an earlier tune-precision")


def test_a_folder_this_process_holds_can_be_held_again_inside(tmp_path: Path) -> None:
    # One command may name a folder twice (compare --report D --dump-golden D): the inner hold locks nothing more,
    # and the lock goes with the outer one.
    with folder_lock(tmp_path / "out", command="compare") as outer:
        with folder_lock(tmp_path / "out", command="compare --dump-golden") as inner:
            assert inner == outer and (outer / LOCK_NAME).is_file()
        assert (outer / LOCK_NAME).is_file()
    assert not (tmp_path / "out").exists()
