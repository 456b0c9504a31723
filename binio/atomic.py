"""Writes that never leave a half-written file: write under a temporary name in the same folder, then rename."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from binio.errors import InferError


def umask() -> int:
    """The process's umask, read without changing it where Linux says it (``os.umask`` sets as it reads)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    current = os.umask(0o022)
    os.umask(current)
    return current


def new_file_mode() -> int:
    """The mode ``open()`` would give a new file under the current umask (0o666 less the umask's bits).

    A stage that writes many files reads it once per call and hands it to `atomic_path`: the umask is read from
    /proc (a file open and parse, or two umask() calls), which would otherwise be paid per file; it is read again
    on the next call, so a umask changed between calls in one process is honoured.
    """
    return 0o666 & ~umask()


def _disk_error(path: Path, exc: OSError) -> InferError:
    if exc.errno == errno.ENOSPC:
        return InferError(f"{path}: no space left on the device while writing", hint="free some space and re-run")
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return InferError(f"{path}: cannot write here ({exc.strerror})")
    return InferError(f"{path}: write failed ({exc.strerror or exc})")


@contextlib.contextmanager
def atomic_path(path: Path, mode: int | None = None) -> Iterator[Path]:
    """Yields a temporary path beside `path`; on success it is renamed onto `path`, on failure removed.

    `mode` is the new file's mode (`new_file_mode()` taken once by a caller writing many files); None reads the
    umask now."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            # mkstemp makes the file 0600 and the rename keeps that: give it the mode open() would have, so
            # msame running as another user, a colleague or a Ray worker can read what infer wrote.
            os.fchmod(fd, new_file_mode() if mode is None else mode)
        finally:
            os.close(fd)
    except OSError as exc:
        raise _disk_error(path, exc) from exc
    tmp = Path(tmp_name)
    try:
        yield tmp
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise _disk_error(path, exc) from exc
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_bytes_atomic(path: Path, data: bytes) -> None:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def write_json_atomic(path: Path, document: Any) -> None:
    write_bytes_atomic(path, (json.dumps(document, indent=2, sort_keys=False) + "\n").encode())
