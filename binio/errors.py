"""The one root of every error a user can cause.

The CLI catches `InferError` once, prints ``error: <message>`` (and ``hint: <hint>``) to stderr and exits with
`exit_code`, with no traceback. Anything else that escapes is a bug and keeps its traceback.
"""

from __future__ import annotations


class InferError(Exception):
    """A mistake in the user's input or environment, with a message that names the object at fault."""

    exit_code: int = 2

    def __init__(self, message: str, *, hint: str | None = None, exit_code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        if exit_code is not None:
            self.exit_code = exit_code

    def __str__(self) -> str:
        return self.message


class Terminated(BaseException):
    """SIGTERM, raised in the main thread as Ctrl-C's KeyboardInterrupt is, so that the same clean-up runs
    (external tools stopped, partial files kept as for an interrupt). Not an Exception: nothing catches it by
    accident."""


class DtypeError(InferError):
    """A dtype name that is unknown, or a dtype that differs from the one expected."""


class ShapeError(InferError):
    """A shape that cannot be parsed, or that differs from the one expected."""


class BinFileError(InferError):
    """A .bin file whose size, dtype or name does not fit what it is read as."""


class ManifestError(InferError):
    """A dataset.json that is missing, corrupt, or does not describe the files beside it."""


class OutputExistsError(InferError):
    """An output that exists already, written only with --force."""


EXCERPT_CHARACTERS = 60  # what an error quotes of a user's text at most: enough to recognise it, never a whole line


def excerpt(text: str | bytes, limit: int = EXCERPT_CHARACTERS) -> str:
    """`text` as an error quotes what it found in a file or a name: quoted, control and non-ASCII characters escaped
    (a name holding a newline or a terminal escape stays one line), cut to `limit` characters with how many more
    there were. A 100 kB name or a line of /etc/shadow is never echoed whole."""
    shown = repr(text[:limit])[2 if isinstance(text, bytes) else 1:-1]  # bytes as b'...' writes them, \xff
    more = len(text) - limit
    return f"'{shown}'" + (f"... ({more} more characters)" if more > 0 else "")


def first_line(exc: BaseException, default: str | None = None) -> str:
    """The first line of a foreign exception's message (TensorFlow's run to pages), for a one-line error; its
    type name (or `default`) when the message is empty."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else (default if default is not None else type(exc).__name__)


def permission_error(exc: PermissionError) -> InferError:
    """A permission refusal as one line naming the file, its owner and mode, and who asked."""
    import os
    import stat

    name = exc.filename if exc.filename is not None else "a file"
    try:
        info = os.stat(name, follow_symlinks=True) if exc.filename is not None else None
    except OSError:
        info = None
    held = f"; it is mode {stat.filemode(info.st_mode)}, owner uid {info.st_uid}" if info is not None else ""
    return InferError(f"{name}: permission denied (infer runs as uid {os.geteuid()}{held})",
                      hint="ask its owner to make it readable (chmod a+r), or copy it somewhere you own")
