"""Atomic writes: the file appears whole or not at all, with the mode a plain write gives, never through a link."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest

from binio.atomic import atomic_file, atomic_path, write_bytes_atomic
from binio.errors import InferError


def test_a_written_file_replaces_the_old_one_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "out" / "a.bin"  # the folder is made
    write_bytes_atomic(target, b"old")
    with atomic_file(target) as handle:
        handle.write(b"new" * 100_000)
        assert target.read_bytes() == b"old"  # readers see the old file until the rename
    assert target.read_bytes() == b"new" * 100_000
    assert sorted(p.name for p in target.parent.iterdir()) == ["a.bin"]


@pytest.mark.parametrize(("mask", "mode"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_the_mode_is_what_the_umask_gives(tmp_path: Path, mask: int, mode: int) -> None:
    previous = os.umask(mask)
    try:
        write_bytes_atomic(tmp_path / "a.json", b"{}")
        with atomic_path(tmp_path / "b.npy") as tmp:
            tmp.write_bytes(b"x")
    finally:
        os.umask(previous)
    assert {stat.S_IMODE((tmp_path / name).stat().st_mode) for name in ("a.json", "b.npy")} == {mode}


def test_a_failed_write_removes_its_temporary_and_keeps_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "a.bin"
    target.write_bytes(b"old")
    with pytest.raises(InferError, match="no space left on the device"), atomic_file(target) as handle:
        handle.write(b"half")
        raise OSError(errno.ENOSPC, "No space left on device")
    with pytest.raises(KeyboardInterrupt), atomic_path(target) as tmp:
        tmp.write_bytes(b"half")
        raise KeyboardInterrupt
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.bin"]


def test_a_symlink_in_the_way_of_the_temporary_is_not_followed(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"keep")
    folder = tmp_path / "out"
    folder.mkdir()
    names = iter(["aaaaaaaa", "bbbbbbbb"])
    monkeypatch.setattr("binio.atomic._random_suffix", lambda: next(names))
    (folder / ".a.bin.aaaaaaaa.tmp").symlink_to(outside)  # the first name tried is a link planted there
    write_bytes_atomic(folder / "a.bin", b"new")
    assert outside.read_bytes() == b"keep"
    assert (folder / "a.bin").read_bytes() == b"new" and not (folder / "a.bin").is_symlink()
