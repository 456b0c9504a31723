"""Closed vocabularies as types: a `typing.Literal` of the words (Python 3.10 has no `enum.StrEnum`, and a Literal's
values are the strings the files and the command line already spell). The type is the one list of the words: its
values are read from it here, for the checks, the options' help and the docs.

Standard library only: the options modules (which `--help` imports) use it.
"""

from __future__ import annotations

import types
import typing
from typing import Any

from binio.errors import InferError


def values_of(kind: Any) -> tuple[str, ...]:
    """The words of a Literal type (of X in ``X | None``); () for any other type."""
    if typing.get_origin(kind) in (typing.Union, types.UnionType):
        return tuple(word for arg in typing.get_args(kind) for word in values_of(arg))
    if typing.get_origin(kind) is typing.Literal:
        return tuple(str(word) for word in typing.get_args(kind))
    return ()


def check_word(value: object, words: tuple[str, ...], named: str, error: type[InferError] = InferError) -> str:
    """`value` when it is one of `words`, else refused as ``NAMED 'value': expected one of a, b, c``."""
    if not isinstance(value, str) or value not in words:
        raise error(f"{named} {value!r}: expected one of {', '.join(words)}")
    return value
