"""Reading the JSON documents the stages leave (dataset.json, run.json, model.json): each names its schema and
version, so a foreign file or one from a newer infer is refused by name instead of half-read."""

from __future__ import annotations

import codecs
import math
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO, Protocol, runtime_checkable

from binio.errors import InferError
from binio.json_stream import PIECE, NotStreamed, parse_pieces
from binio.reading import check_depth, parse_json, read_bounded, unreadable
from binio.regular import refuse_special

# The largest JSON document infer writes: a dataset.json lists every file (about 150 bytes each), so this is some
# three million batch files; a larger one is refused before it is read (and decoded at several times its size).
DOCUMENT_LIMIT = 512 * 2**20


def load_document(path: Path, *, schema: str, version: int, kind: str, short: str, error: type[InferError],
                  missing: str, missing_hint: str, binary_hint: str | None = None,
                  object_hook: Callable[[dict[str, Any]], Any] | None = None) -> dict[str, Any]:
    """The JSON object in `path`, after checking its ``schema`` and that its ``version`` is at most `version`.

    `kind` names the document in full (``dataset manifest``), `short` where it starts a sentence (``manifest``);
    every refusal is an `error`, with `missing` (and `missing_hint`) when the file is not there, and
    `binary_hint` (default `missing_hint`) when it is not text at all (a model or a .bin given in its place);
    `object_hook` is given each JSON object as it is parsed (json.loads's).
    """
    refuse_special(path, f"a {kind}")
    data = _streamed(path, object_hook)
    if data is not None:
        check_depth(data, named=str(path), what=f"a {kind}", error=error)
    else:  # small, or not a valid document: read whole, and refused as before where it is not one
        if isinstance(object_hook, Restartable):
            object_hook.restart()  # what it took from a try that failed is dropped
        data = _whole(path, kind=kind, error=error, missing=missing, missing_hint=missing_hint,
                      binary_hint=binary_hint, object_hook=object_hook)
    if not isinstance(data, dict) or data.get("schema") != schema:
        raise error(f"{path}: not an infer {kind} (expected schema {schema!r})")
    found = data.get("version")
    if not isinstance(found, int) or isinstance(found, bool):
        raise error(f"{path}: {short} has no integer 'version' (found {found!r})")
    if found > version:
        raise error(f"{path}: {short} version {found} is newer than this infer reads (up to {version})",
                    hint="upgrade infer")
    return data


@runtime_checkable
class Restartable(Protocol):
    """An object hook that keeps what it is given (`binio.bin_files.FileRowReader`): `restart` forgets it."""

    def __call__(self, item: dict[str, Any]) -> Any: ...

    def restart(self) -> None: ...


def _streamed(path: Path, object_hook: Callable[[dict[str, Any]], Any] | None) -> Any:
    """The document in `path` parsed a piece of text at a time (`binio.json_stream`), where it is larger than a
    piece, within DOCUMENT_LIMIT and valid UTF-8 JSON; else None (it is then read whole, as a smaller one is)."""
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if not PIECE < size <= DOCUMENT_LIMIT:
                return None
            return parse_pieces(_utf8_pieces(handle), object_hook)
    except (OSError, UnicodeDecodeError, NotStreamed):
        return None


def _utf8_pieces(handle: BinaryIO) -> Iterator[str]:
    decoder = codecs.getincrementaldecoder("utf-8")()  # strict: a byte that is not UTF-8 raises
    while chunk := handle.read(PIECE):
        if b"\0" in chunk:
            raise NotStreamed("a NUL byte")  # binary: refused by the whole read, which names it
        yield decoder.decode(chunk)
    yield decoder.decode(b"", final=True)


def _whole(path: Path, *, kind: str, error: type[InferError], missing: str, missing_hint: str,
           binary_hint: str | None, object_hook: Callable[[dict[str, Any]], Any] | None) -> Any:
    try:
        raw = read_bounded(path, limit=DOCUMENT_LIMIT, named=str(path), what=f"a {kind}", error=error, text=False)
    except FileNotFoundError:
        raise error(f"{path}: {missing}", hint=missing_hint) from None
    except IsADirectoryError:
        raise error(f"{path}: a folder, where a {kind} is expected", hint=missing_hint) from None
    except PermissionError as exc:
        raise unreadable(exc, error) from None
    except OSError as exc:
        raise error(f"{path}: cannot read ({exc.strerror or exc})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise error(f"{path}: not a {kind} (binary, not JSON text)", hint=binary_hint or missing_hint) from None
    del raw  # not held beside the text while it is parsed
    return parse_json(text, named=str(path), what=f"a {kind}", error=error, object_hook=object_hook)


def json_float(value: float) -> float | str:
    """JSON has no NaN or inf: they are written as the strings "NaN", "inf", "-inf"."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value
