"""Atomic writes: the file appears whole or not at all, with the mode a plain write gives, never through a link."""

from __future__ import annotations

import errno
import json
import os
import stat
import sys
from pathlib import Path

import pytest

from binio.atomic import atomic_file, atomic_path, write_bytes_atomic, write_json_atomic
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


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fallocate is Linux's")
def test_a_file_of_known_size_is_reserved_before_it_is_written(tmp_path: Path) -> None:
    """ext4 writes a batch-sized file with less system time when its blocks are allocated at once, as numpy's
    tofile does it; the size stays what is written."""
    from binio.atomic import _fallocate

    size = 4 << 20
    with open(tmp_path / "probe", "wb") as probe:
        if _fallocate() is None or _fallocate()(probe.fileno(), 0, 0, size) != 0:
            pytest.skip(f"{tmp_path}: its file system does not allocate ahead (fallocate refused)")
    with atomic_file(tmp_path / "a.bin", size) as handle:
        assert os.fstat(handle.fileno()).st_blocks * 512 >= size and os.fstat(handle.fileno()).st_size == 0
        handle.write(b"x" * (size // 2))  # less than reserved: no zeros are added at the end
    assert (tmp_path / "a.bin").stat().st_size == size // 2
    (tmp_path / "probe").unlink()
    with atomic_file(tmp_path / "small.bin", 1000) as handle:  # not worth a system call
        assert os.fstat(handle.fileno()).st_blocks == 0


def test_no_space_to_reserve_is_the_error_a_full_disk_gives(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The C library's fallocate failing for lack of space; any other refusal is ignored and the file written."""
    import ctypes

    from binio import atomic

    def full(fd: int, mode: int, offset: int, size: int) -> int:
        ctypes.set_errno(errno.ENOSPC)
        return -1

    def unsupported(fd: int, mode: int, offset: int, size: int) -> int:
        ctypes.set_errno(errno.EOPNOTSUPP)
        return -1

    monkeypatch.setattr(atomic, "_fallocate", lambda: unsupported)
    write_bytes_atomic(tmp_path / "a.bin", b"y" * (2 << 20))
    assert (tmp_path / "a.bin").read_bytes() == b"y" * (2 << 20)
    monkeypatch.setattr(atomic, "_fallocate", lambda: full)
    with pytest.raises(InferError, match=r"b\.bin: no space left on the device"):
        write_bytes_atomic(tmp_path / "b.bin", b"y" * (2 << 20))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.bin"]


def test_json_written_in_pieces_is_json_dumps_byte_for_byte(tmp_path: Path) -> None:
    """write_json_atomic streams the encoder's pieces 64 KiB at a time: the file must be exactly what
    ``json.dumps(document, indent=2)`` and a newline give, across the chunk boundaries and for non-ASCII text."""
    document = {"files": [{"name": f"{i:06d}.bin", "size": i * 3, "note": "é\u4e2d" if i % 7 else None}
                          for i in range(20_000)], "empty": [], "nested": {"a": [1.5, float("inf")]}}
    write_json_atomic(tmp_path / "d.json", document)
    assert (tmp_path / "d.json").read_bytes() == (json.dumps(document, indent=2) + "\n").encode()
    assert (tmp_path / "d.json").stat().st_size > 3 * (1 << 16)  # several pieces were written


def test_a_path_is_written_where_pathlib_would_write_it(tmp_path: Path) -> None:
    """Text paths name the files (no Path, whose parts are interned, per file written); a spelling Path tidies, a
    trailing separator or a last ".", still writes the file Path names."""
    for spelling, written in (("out/", "out"), ("out2/.", "out2"), ("a//b.bin", "a/b.bin"), ("./c.bin", "c.bin")):
        (tmp_path / "a").mkdir(exist_ok=True)
        write_bytes_atomic(os.path.join(str(tmp_path), spelling), b"x")
        assert (tmp_path / written).read_bytes() == b"x", spelling
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["a", "b.bin", "c.bin", "out", "out2"]
