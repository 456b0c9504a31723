"""A JSON document as the pieces of ``json.dumps(document, indent=2)``, with lists that are never built.

A dataset of 50,000 batches lists 50,000 files, a comparison 50,000 batches' metrics: built as dicts to be written,
they were the largest thing a stage held (tens of MB at its end, for a moment). A `StreamedList` stands for such a
list in the document: its items are made one at a time while the text is written, and dropped at once.

The text is the standard library's to the byte (held by tests/binio/test_json_pieces.py against ``json.dumps``):
readers of the files, and their digests, see no difference. The standard library cannot be given a list it does not
hold, hence this small encoder; it is the one the indenting ``json`` encoder runs anyway (pure Python).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from json.encoder import encode_basestring_ascii
from typing import Any

_INDENT = "  "


class StreamedList:
    """A JSON array whose items `make` yields when it is written; `make` is called again each time."""

    __slots__ = ("make",)

    def __init__(self, make: Callable[[], Iterable[Any]]) -> None:
        self.make = make

    def __iter__(self) -> Iterator[Any]:
        return iter(self.make())

    def materialised(self) -> list[Any]:
        """The items as a plain list, for a document printed or compared as a whole."""
        return list(self.make())


def plain(document: Any) -> Any:
    """`document` with every `StreamedList` and every other sequence in it (the columns a record keeps per batch:
    `binio.file_stems.FileStems`, `binio.float_column.FloatColumn`, `binio.name_column.NameColumn`) made into a
    list: what ``json.dumps`` takes."""
    if isinstance(document, dict):
        return {key: plain(value) for key, value in document.items()}
    if isinstance(document, (list, tuple, StreamedList)) or _column(document):
        return [plain(item) for item in document]
    return document


def _column(value: Any) -> bool:
    """A sequence other than a list, a tuple or text: written as a JSON array."""
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes, bytearray))


def _float_text(value: float) -> str:
    # json.dumps's spelling of the three values JSON has no number for (allow_nan, its default)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return float.__repr__(value)


def _scalar_text(value: Any) -> str | None:
    """json.dumps's spelling of null, a boolean or a number (values and keys alike); None for anything else."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        return _float_text(value)
    return None


def _key_text(key: Any) -> str:
    # json.dumps's conversion of the keys it accepts that are not strings
    text = key if isinstance(key, str) else _scalar_text(key)
    if text is None:
        raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")
    return text


def json_pieces(value: Any, level: int = 0) -> Iterator[str]:
    """The text of ``json.dumps(value, indent=2)`` in pieces, `level` the indentation of `value` itself."""
    scalar = None if isinstance(value, str) else _scalar_text(value)
    if isinstance(value, str):
        yield encode_basestring_ascii(value)
    elif scalar is not None:
        yield scalar
    elif isinstance(value, dict):
        yield from _object_pieces(value, level)
    elif isinstance(value, (list, tuple, StreamedList)) or _column(value):
        yield from _array_pieces(value, level)
    else:
        raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _array_pieces(items: Iterable[Any], level: int) -> Iterator[str]:
    inner = "\n" + _INDENT * (level + 1)
    first = True
    for item in items:
        yield ("[" + inner) if first else ("," + inner)
        first = False
        yield from json_pieces(item, level + 1)
    yield "[]" if first else "\n" + _INDENT * level + "]"


def _object_pieces(mapping: dict[Any, Any], level: int) -> Iterator[str]:
    if not mapping:
        yield "{}"
        return
    inner = "\n" + _INDENT * (level + 1)
    first = True
    for key, item in mapping.items():
        yield ("{" + inner) if first else ("," + inner)
        first = False
        yield encode_basestring_ascii(_key_text(key)) + ": "
        yield from json_pieces(item, level + 1)
    yield "\n" + _INDENT * level + "}"
