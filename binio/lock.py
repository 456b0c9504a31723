"""One writer per output folder: an advisory lock (``flock``) held for the whole write, so that a second infer
writing into the same folder is refused at once, naming the folder and the process that holds it, instead of
both leaving a mix of their files."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from binio.errors import InferError, OutputExistsError
from binio.output import LOCK_NAME

# The folders this process holds, by (device, inode): one command may name a folder twice (compare --report D
# --dump-golden D), and flock refuses a second lock of this process's own. A nested hold locks nothing more.
_held: set[tuple[int, int]] = set()


class FolderBusyError(InferError):
    """An output folder another infer process is writing now."""


def _holder(fd: int) -> str:
    try:
        text = os.pread(fd, 64, 0).decode(errors="replace").strip()
    except OSError:
        text = ""
    return f"pid {text}" if text.isdigit() else "a process that has not yet written its pid"


@contextlib.contextmanager
def folder_lock(folder: Path, *, command: str) -> Iterator[Path]:
    """Holds `folder`'s lock (creating the folder) while the body runs; yields the folder.

    The lock is the file ``.infer.lock`` inside, holding the holder's pid. It is removed on release, and so is the
    folder when this call created it and nothing else was left in it. Refuses a `folder` that is a file.
    """
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise OutputExistsError(f"{folder}: exists and is not a folder", hint="choose another output folder")
    created = not os.path.lexists(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InferError(f"{folder}: cannot create the output folder here ({exc.strerror or exc})",
                         hint="choose another output folder") from None
    identity = (folder.stat().st_dev, folder.stat().st_ino)
    if identity in _held:
        yield folder
        return
    path = folder / LOCK_NAME
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
        except OSError as exc:
            raise InferError(f"{folder}: cannot lock the output folder ({exc.strerror or exc})",
                             hint="choose a folder you can write to") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = _holder(fd)
            os.close(fd)
            if exc.errno not in (errno.EWOULDBLOCK, errno.EACCES, errno.EAGAIN):
                raise InferError(f"{folder}: cannot lock the output folder ({exc.strerror or exc})") from None
            raise FolderBusyError(f"{folder}: another infer ({holder}) is writing into this folder now; "
                                  f"{command} refused", hint="wait for it to finish, or choose another output folder"
                                  ) from None
        try:
            same = os.fstat(fd).st_ino == os.stat(path, follow_symlinks=False).st_ino
        except FileNotFoundError:
            same = False
        if same:  # not a lock file its last holder removed between our open and our lock
            break
        os.close(fd)
    try:
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except OSError as exc:  # a full disk, a quota: said as every writer says it
            raise InferError(f"{path}: cannot write the lock file ({exc.strerror or exc})",
                             hint="free some space on that disk, or choose another output folder") from None
        _held.add(identity)
        yield folder
    finally:
        _held.discard(identity)
        with contextlib.suppress(OSError):
            path.unlink()
        os.close(fd)
        if created:
            with contextlib.suppress(OSError):
                folder.rmdir()  # only when empty: a failed first write leaves no folder behind
