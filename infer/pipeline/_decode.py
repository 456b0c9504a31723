"""One decoder for every table of pipeline.toml: a TOML table into an options dataclass, driven by its fields (their
types, their defaults and the `infer._option_fields` Setting each carries: the key's name, the value meaning None,
a decoder of a table of its own). A mistake is one line naming the file, the table, the key and what was expected.
"""

from __future__ import annotations

import dataclasses
import difflib
import types
import typing
from pathlib import Path
from typing import Any

from binio.errors import InferError
from infer._option_fields import NO_UNSET, setting_of


class ConfigError(InferError):
    """A pipeline file that is missing, not TOML, or holds a key or value the pipeline does not take."""


_PLAIN = {bool: "boolean", int: "integer", float: "number", str: "string"}


def type_name(value: Any) -> str:
    names = {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "a list",
             dict: "a table"}
    return names.get(type(value), type(value).__name__)


def _expected_name(kind: Any) -> str:
    origin = typing.get_origin(kind)
    if origin is tuple:
        return f"a list of {_PLAIN[typing.get_args(kind)[0]]}s"
    if origin is dict:
        return f"a table of {_PLAIN[typing.get_args(kind)[1]]}s"
    if dataclasses.is_dataclass(kind):
        return "a table"
    name = _PLAIN[kind]
    return f"an {name}" if name[0] in "aeiou" else f"a {name}"


def _where(path: Path, table: str, key: str) -> str:
    return f"{path}: [{table}] {key}" if table else f"{path}: {key}"


def _without_none(kind: Any) -> Any:
    if typing.get_origin(kind) in (typing.Union, types.UnionType):
        return next(k for k in typing.get_args(kind) if k is not type(None))
    return kind


def _value(value: Any, kind: Any, where: str, path: Path, table: str) -> Any:
    kind = _without_none(kind)
    origin = typing.get_origin(kind)
    if dataclasses.is_dataclass(kind):
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: expected a table, got {type_name(value)} {value!r}")
        return decode_table(kind, value, path, table)  # type: ignore[arg-type]
    if origin is tuple:
        item = typing.get_args(kind)[0]
        if not isinstance(value, list):
            raise ConfigError(f"{where}: expected {_expected_name(kind)}, got {type_name(value)} {value!r}")
        return tuple(_value(v, item, f"{where}[{i}]", path, table) for i, v in enumerate(value))
    if origin is dict:
        item = typing.get_args(kind)[1]
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: expected {_expected_name(kind)}, got {type_name(value)} {value!r}")
        return {str(k): _value(v, item, f"{where}.{k}", path, table) for k, v in value.items()}
    # TOML has real types; only an integer where a number is asked is widened (1 for 1.0).
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if type(value) is not kind:
        raise ConfigError(f"{where}: expected {_expected_name(kind)}, got {type_name(value)} {value!r}")
    return value


def decode_table(cls: type, table: dict[str, Any], path: Path, name: str) -> Any:
    """The `cls` that the TOML `table` ([name]) describes: refuses an unknown key (with the closest one), a value
    of the wrong type and a missing required key; a key left out keeps the field's default. Errors the options'
    own check raises (an InferError naming the flag) are given the file and the key."""
    hints = typing.get_type_hints(cls)
    keyed = {key: f for f in dataclasses.fields(cls) if (key := setting_of(f).toml) is not None}
    for key in table:
        if key not in keyed:
            close = difflib.get_close_matches(key, list(keyed), n=1, cutoff=0.5)
            suggestion = f"; did you mean {close[0]!r}?" if close else ""
            raise ConfigError(f"{_where(path, name, key)}: unknown key{suggestion} (valid keys: {', '.join(keyed)})")
    values: dict[str, Any] = {}
    for key, item in keyed.items():
        where = _where(path, name, key)
        if key not in table:
            if item.default is dataclasses.MISSING and item.default_factory is dataclasses.MISSING:
                raise ConfigError(f"{where}: missing (it has no default)")
            continue
        spelling, value = setting_of(item), table[key]
        if spelling.decode is not None:
            values[item.name] = spelling.decode(value, where)
        elif spelling.unset is not NO_UNSET and value == spelling.unset \
                and type(value) is type(spelling.unset):
            values[item.name] = None
        else:
            child = key if not name else f"{name}.{key}"
            values[item.name] = _value(value, hints[item.name], where, path,
                                       child if dataclasses.is_dataclass(_without_none(hints[item.name])) else name)
    try:
        options = cls(**values)
        check = getattr(options, "check", None)
        if callable(check):
            check()
    except ConfigError:
        raise
    except InferError as exc:  # the options' own check, in the command line's words: said in the file's
        raise ConfigError(_in_file_words(exc.message, keyed, table, path, name), hint=exc.hint) from None
    return options


def _in_file_words(message: str, keyed: dict[str, dataclasses.Field[Any]], table: dict[str, Any], path: Path,
                   name: str) -> str:
    """``--color GBR: expected RGB or BGR`` as ``FILE: [data.preprocessing] color: expected RGB or BGR, got
    'GBR'``: the key the flag is, and the value as the file wrote it."""
    flag, _, rest = message.partition(" ")
    value, said, reason = rest.partition(": ")
    if said and " " not in value:  # the `--flag VALUE: reason` shape; any other message is kept whole
        for key, item in keyed.items():
            if setting_of(item).flag == flag and key in table:
                return f"{_where(path, name, key)}: {reason}, got {table[key]!r}"
    return f"{path}: [{name}] {message}"
