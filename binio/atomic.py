"""Writes that never leave a half-written file: write under a temporary name in the same folder, then rename."""

from __future__ import annotations

import contextlib
import errno
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from binio.errors import InferError


def _disk_error(path: Path, exc: OSError) -> InferError:
    if exc.errno == errno.ENOSPC:
        return InferError(f"{path}: no space left on the device while writing", hint="free some space and re-run")
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return InferError(f"{path}: cannot write here ({exc.strerror})")
    return InferError(f"{path}: write failed ({exc.strerror or exc})")


_TEMP_TRIES = 100


def _random_suffix() -> str:
    return os.urandom(4).hex()  # not `secrets`, whose import (hmac, base64, random) costs more than the writes


def _create_beside(path: Path) -> tuple[int, Path]:
    """A new, empty, uniquely named file in `path`'s folder, open for writing: its descriptor and path.

    Created as ``open()`` creates a file (mode 0o666 less the umask, the folder's default ACL), so the rename
    hands readers (msame as another user, a colleague, a Ray worker) what a plain write would have; O_EXCL
    refuses a name already taken, a symlink included, so nothing is written through a link."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    for _ in range(_TEMP_TRIES):
        tmp = path.with_name(f".{path.name}.{_random_suffix()}.tmp")
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, f"no free temporary name beside it after {_TEMP_TRIES} tries")


@contextlib.contextmanager
def _renamed_onto(path: Path, tmp: Path) -> Iterator[None]:
    """Renames `tmp` onto `path` when the body succeeds; removes `tmp` when it fails."""
    try:
        yield
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise _disk_error(path, exc) from exc
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _new_temp(path: Path) -> tuple[int, Path]:
    try:
        try:
            return _create_beside(path)
        except FileNotFoundError:  # the folder is made only when missing: a writer of many files pays no mkdir
            path.parent.mkdir(parents=True, exist_ok=True)
            return _create_beside(path)
    except OSError as exc:
        raise _disk_error(path, exc) from exc


@contextlib.contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """Yields a new, empty temporary file beside `path`, by name; on success it is renamed onto `path`, on failure
    removed. For writers that open the file themselves (np.save, json); `atomic_file` saves them the second open."""
    path = Path(path)
    fd, tmp = _new_temp(path)
    os.close(fd)
    with _renamed_onto(path, tmp):
        yield tmp


@contextlib.contextmanager
def atomic_file(path: Path) -> Iterator[BinaryIO]:
    """Yields a temporary file beside `path`, open for binary writing (a large write goes straight through, whole);
    on success it is closed and renamed onto `path`, on failure removed."""
    path = Path(path)
    fd, tmp = _new_temp(path)
    with _renamed_onto(path, tmp), open(fd, "wb") as handle:
        yield handle


def write_bytes_atomic(path: Path, data: bytes) -> None:
    with atomic_file(path) as handle:
        handle.write(data)


def write_json_atomic(path: Path, document: Any) -> None:
    write_bytes_atomic(path, (json.dumps(document, indent=2, sort_keys=False) + "\n").encode())
