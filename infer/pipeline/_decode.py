"""One decoder for every table of pipeline.toml: a TOML table into an options dataclass, driven by its fields (their
types, their defaults and the `infer._option_fields` Setting each carries: the key's name, the value meaning None,
a decoder of a value of its own, nested options inline or in a table of their own). A path is taken relative to the
pipeline file's folder. A mistake is one line naming the file, the table, the key and what was expected.
"""

from __future__ import annotations

import dataclasses
import math
import typing
from pathlib import Path
from typing import Any

from binio.errors import InferError
from binio.texts import close_matches
from binio.vocabulary import values_of
from infer._option_fields import (
    NO_UNSET,
    default_of,
    field_types,
    is_optional,
    nested_class,
    setting_of,
    toml_fields,
    type_name,
    without_none,
)


class ConfigError(InferError):
    """A pipeline file that is missing, not TOML, or holds a key or value the pipeline does not take."""


_LARGEST_INTEGER = 2**63 - 1  # what numpy, TensorFlow and ATC take: a count or size past 64 bits fits none of them
_PLAIN = {bool: "boolean", int: "integer", float: "number", str: "string", Path: "string"}


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


def _value(value: Any, kind: Any, where: str, path: Path, table: str) -> Any:
    kind = without_none(kind)
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
    if values_of(kind):  # a closed vocabulary: a string here, its words checked by the options (naming them)
        if type(value) is not str:
            raise ConfigError(f"{where}: expected a string, got {type_name(value)} {_cut(value)}")
        return value
    if kind is Path:
        if type(value) is not str:
            raise ConfigError(f"{where}: expected a path (a string), got {type_name(value)} {value!r}")
        return contained_path(value, path, where)
    # TOML has real types; only an integer where a number is asked is widened (1 for 1.0).
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        if abs(value) > _LARGEST_INTEGER:
            raise ConfigError(f"{where}: expected a number of 64 bits at most, got {_cut(value)}")
        return float(value)
    if type(value) is not kind:
        raise ConfigError(f"{where}: expected {_expected_name(kind)}, got {type_name(value)} {_cut(value)}")
    if kind is int and not -_LARGEST_INTEGER - 1 <= value <= _LARGEST_INTEGER:
        raise ConfigError(f"{where}: expected an integer of 64 bits at most, got {_cut(value)}")
    if kind is float and not math.isfinite(value):
        raise ConfigError(f"{where}: expected a finite number, got {value!r}")
    return value


def _cut(value: Any) -> str:
    """A value as a refusal shows it: cut short (a hostile file's integer may have thousands of digits)."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def contained_path(value: str, path: Path, where: str) -> Path:
    """A path the pipeline file `path` names: an absolute one (or ``~/...``) as written, on purpose; a relative one
    inside the file's folder, where it is resolved. A relative path with ``..`` is refused: it would read or write
    outside the folder the file describes (``work_dir = "../../x"``), which an absolute path does only when asked.
    Links are followed: a link inside the folder is how a shared dataset is reached on purpose."""
    if not value.strip():  # Path("") is the file's own folder: work_dir = "" would write beside pipeline.toml
        raise ConfigError(f"{where}: an empty path; expected a file or folder name",
                          hint="leave the key out for its default")
    given = Path(value).expanduser()
    if given.is_absolute():
        return given
    if ".." in value.replace("\\", "/").split("/"):
        folder = path.resolve().parent
        raise ConfigError(f"{where}: {value!r}: '..' leaves the pipeline file's folder {folder}",
                          hint="relative paths stay inside the pipeline file's folder; write an absolute path to "
                               "reach outside it on purpose")
    return path.resolve().parent / given


def _keys(cls: type) -> dict[str, tuple[dataclasses.Field[Any], Any]]:
    """Every key a [table] of `cls` takes (inline nested options' keys included): key -> (field, its class)."""
    return {setting.toml: (item, owner) for item, setting, owner in toml_fields(cls) if setting.toml is not None}


def decode_table(cls: type, table: dict[str, Any], path: Path, name: str) -> Any:
    """The `cls` that the TOML `table` ([name]) describes: refuses an unknown key (with the closest one), a value
    of the wrong type and a missing required key; a key left out keeps the field's default. Errors the options'
    own check raises (an InferError naming the flag) are given the file and the key."""
    keyed = _keys(cls)
    for key in table:
        if key not in keyed:
            close = close_matches(key, list(keyed), cutoff=0.5)
            suggestion = f"; did you mean {close[0]!r}?" if close else ""
            raise ConfigError(f"{_where(path, name, key)}: unknown key{suggestion} (valid keys: {', '.join(keyed)})")
    try:
        return _decode(cls, table, path, name)
    except ConfigError:
        raise
    except InferError as exc:  # the options' own check, in the command line's words: said in the file's
        raise ConfigError(_in_file_words(exc.message, keyed, table, path, name), hint=exc.hint) from None


def _decode(cls: type, table: dict[str, Any], path: Path, name: str) -> Any:
    values: dict[str, Any] = {}
    for item in dataclasses.fields(cls):
        spelling = setting_of(item)
        if spelling.toml is None:
            continue
        inner = nested_class(cls, item)
        if inner is not None and spelling.inline:
            nested = _decode_inline(cls, item, inner, table, path, name)
            if nested is not _LEFT_OUT:
                values[item.name] = nested
            continue
        key, where = spelling.toml, _where(path, name, spelling.toml)
        if key not in table:
            if item.default is dataclasses.MISSING and item.default_factory is dataclasses.MISSING:
                raise ConfigError(f"{where}: missing (it has no default)")
            continue
        value = table[key]
        if spelling.decode is not None:
            try:
                values[item.name] = spelling.decode(value, where)
            except ConfigError:
                raise
            except InferError as exc:  # a decoder's refusal already names the file and the key
                raise ConfigError(exc.message, hint=exc.hint) from None
        elif _is_unset(spelling, value):
            values[item.name] = None
        else:
            kind = field_types(cls)[item.name]
            child = key if not name else f"{name}.{key}"
            values[item.name] = _value(value, kind, where, path, child if inner is not None else name)
    options = cls(**values)
    check = getattr(options, "check", None)
    if callable(check):
        check()
    return options


_LEFT_OUT: Any = object()


def _is_unset(spelling: Any, value: Any) -> bool:
    """Whether `value` is TOML's spelling of "left out" for the key (``aipp_config = ""``)."""
    return spelling.unset is not NO_UNSET and value == spelling.unset and type(value) is type(spelling.unset)


def _decode_inline(cls: type, item: dataclasses.Field[Any], inner: type, table: dict[str, Any], path: Path,
                   name: str) -> Any:
    """Nested options whose keys sit in the table itself: [model]'s freeze options, [convert]'s aipp_* keys. An
    optional one is there when its switch (``aipp = true``) or a key that enables it (``aipp_config``) says so;
    its other keys alone are refused."""
    spelling = setting_of(item)
    own = [key for key, (field, _) in _keys(inner).items() if key in table
           and not _is_unset(setting_of(field), table[key]) and table[key] != default_of(field)]
    if not is_optional(field_types(cls)[item.name]):
        return _decode(inner, table, path, name) if own else _LEFT_OUT
    switch = spelling.toml or ""
    where = _where(path, name, switch)
    on = table.get(switch, False)
    if type(on) is not bool:
        raise ConfigError(f"{where}: expected a boolean, got {type_name(on)} {on!r}")
    enabling = [key for key, (field, _) in _keys(inner).items() if key in table and setting_of(field).enables
                and not _is_unset(setting_of(field), table[key])]
    if not on and not enabling:
        if own:
            raise ConfigError(f"{_where(path, name, own[0])}: set without {switch} = true"
                              + (f": {spelling.needs[0]}" if spelling.needs[0] else ""),
                              hint=f"add {switch} = true to [{name}]")
        return None
    return _decode(inner, table, path, name)


def _in_file_words(message: str, keyed: dict[str, tuple[dataclasses.Field[Any], Any]], table: dict[str, Any],
                   path: Path, name: str) -> str:
    """``--color GBR: expected RGB or BGR`` as ``FILE: [data.preprocessing] color: expected RGB or BGR, got
    'GBR'``: the key the flag is, and the value as the file wrote it."""
    flag, _, rest = message.partition(" ")
    value, said, reason = rest.partition(": ")
    if said and " " not in value:  # the `--flag VALUE: reason` shape; any other message is kept whole
        for key, (item, _) in keyed.items():
            if setting_of(item).flag == flag and key in table:
                return f"{_where(path, name, key)}: {reason}, got {table[key]!r}"
    return f"{path}: [{name}] {message}"
