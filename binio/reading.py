"""Reading a file a user hands infer (a document, a labels list, a config): one place that turns what such a file
can hold into one line naming it.

A file infer did not write may hold anything: bytes that are not UTF-8, a FIFO in its place, lists nested a
hundred thousand deep (Python's decoders then raise RecursionError), numbers of thousands of digits. The readers
here refuse each of these with the file, the place and what was expected; `reading` marks whatever else a reader
raises while it interprets a file, so that the command line's one catch (`read_failure`) still says which file it
was, in one line, instead of a traceback.

Standard library only (the pipeline's options are read with it, and `infer --help` imports no numpy).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from binio.errors import InferError, first_line, permission_error
from binio.regular import refuse_special

log = logging.getLogger(__name__)

# The deepest nesting a document infer reads may have. Its own documents nest six levels at most (model.json's
# converted.settings.aipp...); a few hundred would already take Python's recursion limit in a reader that walks it.
MAX_DEPTH = 64
# What a reader can raise on a file that holds what it did not expect: the command line names the file instead of
# printing a traceback. (UnicodeError is a ValueError, named for the reader.)
READ_FAILURES: tuple[type[BaseException], ...] = (OSError, ValueError, UnicodeError, RecursionError, OverflowError,
                                                 LookupError, TypeError, AttributeError)
_TAG = "infer_file_being_read"
# The most a user's text file holds (a pipeline file, a labels or keep_dtype list, an AIPP config): a labels file of
# ten million samples is 80 MB. A larger one is refused before it is read, not read whole into memory.
TEXT_LIMIT = 256 * 2**20
_HEAD = 4096  # the first bytes a text file is checked for a NUL in


@contextlib.contextmanager
def reading(path: Path | str) -> Iterator[None]:
    """Marks any of `READ_FAILURES` the body raises as raised while reading `path` (the innermost file wins), so
    that `read_failure` can name the file. A reader's own refusals (InferError) pass untouched."""
    try:
        yield
    except InferError:
        raise
    except READ_FAILURES as exc:
        if getattr(exc, _TAG, None) is None:
            setattr(exc, _TAG, str(path))
        raise


def file_being_read(exc: BaseException) -> str | None:
    """The file `reading` marked `exc` with, if any."""
    found = getattr(exc, _TAG, None)
    return found if isinstance(found, str) else None


def read_failure(exc: BaseException) -> InferError | None:
    """An exception no reader turned into a refusal, as one line naming the file it came from: a file `reading`
    marked, or an OSError that names its file (a full disk, an I/O error). None for anything else (a bug)."""
    path = file_being_read(exc)
    if path is not None:
        log.debug("while reading %s", path, exc_info=exc)
        return InferError(f"{path}: cannot be read: {_what_went_wrong(exc)}",
                          hint="check the file (was it written by infer, or edited?); -v shows where it failed")
    if isinstance(exc, OSError) and exc.filename is not None:
        other = f" -> {exc.filename2}" if exc.filename2 is not None else ""
        return InferError(f"{exc.filename}{other}: {exc.strerror or first_line(exc)}")
    return None


def _what_went_wrong(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    if isinstance(exc, UnicodeDecodeError):
        return f"not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start})"
    if isinstance(exc, OSError):
        return exc.strerror or first_line(exc)
    return f"unexpected content ({type(exc).__name__}: {first_line(exc)})"


def read_text_file(path: Path, *, what: str, error: type[InferError] = InferError, named: str | None = None,
                   limit: int = TEXT_LIMIT) -> str:
    """The UTF-8 text of the user's file at `path`, which should be `what` (``a labels file``). A FIFO, device or
    socket is refused before it is opened, a file of more than `limit` bytes or whose first bytes hold a NUL (binary
    data, not text) before it is read whole; a missing file, a folder, a file this user may not read and bytes that
    are not UTF-8 are refused by name (`named`, default the path: ``--keep-dtype FILE``)."""
    named = named or str(path)
    refuse_special(Path(path), what)
    try:
        data = read_bounded(Path(path), limit=limit, named=named, what=what, error=error)
    except FileNotFoundError:
        raise error(f"{named}: no such file (expected {what})") from None
    except IsADirectoryError:
        raise error(f"{named}: a folder, where {what} is expected") from None
    except PermissionError as exc:
        raise unreadable(exc, error) from None
    except OSError as exc:
        raise error(f"{named}: cannot read ({exc.strerror or exc})") from None
    return utf8_text(data, named=named, what=what, error=error)


def read_bounded(path: Path, *, limit: int, named: str, what: str, error: type[InferError] = InferError,
                 text: bool = True) -> bytes:
    """The bytes of `path`, refused before they are read whole when there are more than `limit` of them, or, for
    `text`, when the first of them hold a NUL byte (a model, a .bin or a zeroed file given for a text). OSErrors
    pass to the caller."""
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if size > limit:
            raise error(f"{named}: {size:,} bytes, more than {what} holds (at most {limit:,})")
        head = handle.read(_HEAD)
        if text and b"\0" in head:
            at = head.index(b"\0")
            raise error(f"{named}: byte {at} is NUL: binary data, not {what} (text)")
        return head + handle.read()


def unreadable(exc: PermissionError, error: type[InferError]) -> InferError:
    """A permission refusal as `error`: the file, its mode and owner, and who asked (`permission_error`)."""
    said = permission_error(exc)
    return error(said.message, hint=said.hint)


def utf8_text(data: bytes, *, named: str, what: str, error: type[InferError] = InferError) -> str:
    """`data` decoded as UTF-8; a byte that is not is refused with its line and column."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise error(f"{named}: line {line}, column {column}: byte 0x{data[exc.start]:02x} is not UTF-8; expected "
                    f"{what} as UTF-8 text") from None


def parse_json(text: str, *, named: str, what: str, error: type[InferError] = InferError,
               object_hook: Callable[[dict[str, Any]], Any] | None = None) -> Any:
    """The JSON value `text` holds, refused by name when it is not JSON, holds a number Python will not convert
    (thousands of digits) or nests deeper than `MAX_DEPTH`; `object_hook` as json.loads takes it."""
    try:
        value = json.loads(text, object_hook=object_hook)
    except json.JSONDecodeError as exc:
        raise error(f"{named}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except RecursionError:
        raise error(too_deep(named, what)) from None
    except ValueError as exc:  # an integer of more digits than Python converts
        raise error(f"{named}: not {what} ({first_line(exc)})") from None
    check_depth(value, named=named, what=what, error=error)
    return value


def too_deep(named: str, what: str) -> str:
    return f"{named}: nested more than {MAX_DEPTH} levels deep; not {what}"


def check_depth(value: Any, *, named: str, what: str, error: type[InferError] = InferError) -> None:
    """Refuses a decoded document that nests lists or objects more than `MAX_DEPTH` levels (walked without
    recursion, so a deep one cannot exhaust the stack here)."""
    pending: list[tuple[Any, int]] = [(value, 1)]  # a list or an object, and how many enclose it, itself included
    while pending:
        item, depth = pending.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        if depth > MAX_DEPTH:
            raise error(too_deep(named, what))
        # Only what can nest: a manifest's tens of thousands of names and digests are not walked one by one.
        pending.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
