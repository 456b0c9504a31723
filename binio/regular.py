"""Only regular files are read as data: a FIFO, a device or a socket given as a source or a document would make a
read wait forever (or never end, /dev/zero), so it is refused by name first."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from binio.errors import InferError

_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


class SpecialFileError(InferError):
    """A FIFO, device or socket where a file of data was expected."""


def special_kind(path: str | Path) -> str | None:
    """What `path` is (links followed) when it is neither a regular file nor a folder; None otherwise."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None  # missing or unreadable: the reader says so in its own words
    return next((name for test, name in _KINDS if test(mode)), None)


def refuse_special(path: str | Path, what: str = "a file") -> None:
    """Refuses a FIFO, device or socket given where `what` is expected."""
    kind = special_kind(path)
    if kind is not None:
        raise SpecialFileError(f"{path}: {kind}, not a regular file; expected {what} (reading it could wait "
                               f"forever)", hint="save the data to a regular file and pass that")
