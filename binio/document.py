"""Reading the JSON documents the stages leave (dataset.json, run.json, model.json): each names its schema and
version, so a foreign file or one from a newer infer is refused by name instead of half-read."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from binio.errors import InferError
from binio.reading import parse_json, read_bounded, unreadable
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
    del raw  # not held beside the text while it is parsed: a dataset.json of 50,000 batches is 7 MB
    data = parse_json(text, named=str(path), what=f"a {kind}", error=error, object_hook=object_hook)
    if not isinstance(data, dict) or data.get("schema") != schema:
        raise error(f"{path}: not an infer {kind} (expected schema {schema!r})")
    found = data.get("version")
    if not isinstance(found, int) or isinstance(found, bool):
        raise error(f"{path}: {short} has no integer 'version' (found {found!r})")
    if found > version:
        raise error(f"{path}: {short} version {found} is newer than this infer reads (up to {version})",
                    hint="upgrade infer")
    return data


def json_float(value: float) -> float | str:
    """JSON has no NaN or inf: they are written as the strings "NaN", "inf", "-inf"."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value
