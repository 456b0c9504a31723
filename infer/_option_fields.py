"""Each stage's options dataclass is the one declaration of its options: what a field is called outside Python (its
pipeline.toml key, its command-line flag), its one help text, how the command line spells its value and how TOML
(which has no null) spells "left out".

The options classes declare their fields with `setting(...)`. From those fields alone come the command's flags
(`infer.cli.options`), the pipeline file's tables (`infer.pipeline._decode`), the template's commented defaults
(`template_lines`), the equivalent commands the pipeline report prints (`flag_args`) and the options table of the
docs (`infer._option_docs`): a setting cannot have two names, two defaults or two help texts (Polygraphy's
add_to_script idea, with its CLI's "emit only what the user set").

A value's spellings travel with its type, not with the field: a closed vocabulary (a `typing.Literal`,
`binio.vocabulary`) is a string on the command line and in the file, its words listed after the help wherever the
help is shown (and checked by the options when they are built); a tuple of tuples (gears) is written ``a,b;c,d``; a
value with a ``cli_texts()`` method (the thresholds) writes itself.

A field whose type is another options dataclass nests it: on the command line its flags are the command's own (a
flag of the field, if it has one, switches an optional one on: ``--aipp``); in the pipeline file it is a table of
its own (``[data.preprocessing]``), or its keys sit in the enclosing table (`inline`).

Standard library only: the options modules import this, and `infer --help` must not import numpy.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import types
import typing
from collections.abc import Callable, Iterator
from dataclasses import MISSING, Field
from typing import Any, NamedTuple

from binio.vocabulary import values_of

_KEY = "infer.setting"
NO_UNSET: Any = type("NoUnset", (), {"__repr__": lambda self: "NO_UNSET"})()  # a field TOML cannot leave None


class Setting(NamedTuple):
    """How one options field is spelled in pipeline.toml and on the command line. (A NamedTuple, not a dataclass:
    every command's start-up reads these, and a 20-field dataclass costs 1.6 ms to create, this 0.2 ms.)"""

    toml: str | None  # the key in the stage's table (or a nested table's name); None: the file does not set it
    flag: str | None  # the command-line flag (a nested optional's: its switch); None: not on the command line
    help: str = ""  # the one help text: the command's --help, the template's comment, the docs' table
    unset: Any = NO_UNSET  # the TOML value that means None ("auto", 0, ""): TOML has no null
    repeat: bool = False  # a tuple given as one flag per item (--atc-arg A --atc-arg B), else joined with commas
    negative: str | None = None  # the flag that gives False (--no-verify, --no-expected-from-emulation)
    decode: Callable[[Any, str], Any] | None = None  # (TOML value, where) -> the field's value, for a table of its own
    always: bool = False  # given on the command line even at its default (the command's own default differs)
    example: Any = NO_UNSET  # what the template shows, commented out, for a key whose default TOML cannot write
    short: str | None = None  # the one-letter spelling beside the flag (-o)
    parse: Callable[[Any, str], Any] | None = None  # (the command line's text, or list of texts; flag) -> value
    shown: str = ""  # the default as help shows it, where the field's own default is None ("the contract's")
    inline: bool = False  # a nested options field whose keys sit in the enclosing table
    only: tuple[str, ...] = ()  # a nested field: the nested class's fields taken (all when empty)
    enables: bool = False  # in a nested optional: giving this field alone switches its parent on (--aipp-config)
    needs: tuple[str, str] = ("", "")  # a nested optional's switch: (why its fields need it, the hint)
    switch: bool = True  # a nested optional: its flag switches it on (--aipp); False: only its `enables` fields do
    required: bool = False  # the command line must give it (the pipeline fills it in itself: an output folder)


def setting(default: Any = MISSING, *, default_factory: Any = MISSING, toml: str | bool | None = True,
            flag: str | bool | None = True, help: str = "", unset: Any = NO_UNSET, repeat: bool = False,
            negative: str | None = None, decode: Callable[[Any, str], Any] | None = None,
            always: bool = False, example: Any = NO_UNSET, short: str | None = None,
            parse: Callable[[Any, str], Any] | None = None, shown: str = "", inline: bool = False,
            only: tuple[str, ...] = (), enables: bool = False, needs: tuple[str, str] = ("", ""),
            required: bool = False, switch: bool = True) -> Any:
    """A dataclass field with its Setting. ``toml=True``/``flag=True`` name it after the field (``--loop``);
    False leaves it out of the file / the command line."""
    spelling = {"toml": toml, "flag": flag, "help": help, "unset": unset, "repeat": repeat, "negative": negative,
                "decode": decode, "always": always, "example": example, "short": short, "parse": parse,
                "shown": shown, "inline": inline, "only": only, "enables": enables, "needs": needs,
                "required": required, "switch": switch}
    if default_factory is not MISSING:
        return dataclasses.field(default_factory=default_factory, metadata={_KEY: spelling})
    return dataclasses.field(default=default, metadata={_KEY: spelling})


def setting_of(item: Field[Any]) -> Setting:
    """A field's Setting; a field declared without `setting` is its name in the file and ``--its-name``."""
    spelling = dict(item.metadata.get(_KEY, {}))
    toml, flag = spelling.pop("toml", True), spelling.pop("flag", True)
    return Setting(toml=item.name if toml is True else (toml or None),
                   flag=f"--{item.name.replace('_', '-')}" if flag is True else (flag or None), **spelling)


def default_of(item: Field[Any]) -> Any:
    if item.default is not MISSING:
        return item.default
    if item.default_factory is not MISSING:
        return item.default_factory()
    return MISSING


@functools.cache
def field_types(cls: type) -> dict[str, Any]:
    """Each field's type, its annotation evaluated (the options modules import every type they name)."""
    return typing.get_type_hints(cls)


def without_none(kind: Any) -> Any:
    """``X | None`` -> X; any other type as it is."""
    if typing.get_origin(kind) in (typing.Union, types.UnionType):
        return next(k for k in typing.get_args(kind) if k is not type(None))
    return kind


def is_optional(kind: Any) -> bool:
    return typing.get_origin(kind) in (typing.Union, types.UnionType) and type(None) in typing.get_args(kind)


def nested_class(cls: type, item: Field[Any]) -> type | None:
    """The options class a field nests (``ImageOptions`` for ``image: ImageOptions``), or None. A dataclass value
    the field parses and decodes itself (the thresholds) is a value, not nested options."""
    spelling = item.metadata.get(_KEY, {})
    if spelling.get("parse") is not None or spelling.get("decode") is not None:
        return None
    kind = without_none(field_types(cls)[item.name])
    return kind if dataclasses.is_dataclass(kind) and isinstance(kind, type) else None


def nested_fields(cls: type, item: Field[Any]) -> tuple[Field[Any], ...]:
    """The fields of the class `item` nests, as far as `item` takes them (`Setting.only`)."""
    inner = nested_class(cls, item)
    assert inner is not None
    only = setting_of(item).only
    return tuple(f for f in dataclasses.fields(inner) if not only or f.name in only)


class Flagged(NamedTuple):
    """One command-line flag of an options class, with the path of fields that leads to it."""

    path: tuple[str, ...]  # ("aipp", "preprocessing", "mean")
    owner: type  # the class the field is declared in
    item: Field[Any]
    setting: Setting
    switch: bool = False  # the flag of a nested optional: it builds the nested options

    @property
    def name(self) -> str:
        """A Python identifier for the flag's parameter: the field path joined by ``__``."""
        return "__".join(self.path)


def described(cls: type, item: Field[Any]) -> Setting:
    """A field's Setting as the help shows it: a closed vocabulary's words after its help text."""
    spelling = setting_of(item)
    words = values_of(field_types(cls)[item.name])
    if not words or not spelling.help:
        return spelling
    return spelling._replace(help=f"{spelling.help} One of: {', '.join(words)}.")


def flagged(cls: type, path: tuple[str, ...] = ()) -> Iterator[Flagged]:
    """Every command-line flag `cls` declares, nested ones included, in field order."""
    for item in dataclasses.fields(cls):
        spelling = described(cls, item)
        inner = nested_class(cls, item)
        if inner is None:
            if spelling.flag is not None or spelling.negative is not None:
                yield Flagged((*path, item.name), cls, item, spelling)
            continue
        if spelling.flag is None:
            continue  # nested options the command line does not take
        if is_optional(field_types(cls)[item.name]) and spelling.switch:
            yield Flagged((*path, item.name), cls, item, spelling, switch=True)
        yield from (flag for flag in flagged(inner, (*path, item.name))
                    if not spelling.only or flag.path[len(path) + 1] in spelling.only)


def cli_texts(spelling: Setting, value: Any) -> tuple[str, ...]:
    """A value as the command line spells it: its flag's argument(s), as its type writes it (``cli_texts()``), or
    by its kind: a tuple of tuples ``a,b;c,d``, a tuple ``a,b`` (or one argument each, repeated)."""
    written = getattr(value, "cli_texts", None)
    if callable(written):
        return tuple(written())
    if isinstance(value, tuple) and value and all(isinstance(v, tuple) for v in value):
        return (";".join(",".join(_text(x) for x in v) for v in value),)
    if isinstance(value, tuple):
        return tuple(_text(v) for v in value) if spelling.repeat else (",".join(_text(v) for v in value),)
    if isinstance(value, dict):
        return tuple(f"{k}={v}" for k, v in value.items())
    return (_text(value),)


def _text(value: Any) -> str:
    return repr(value) if isinstance(value, float) else str(value)


def shown_default(spelling: Setting, default: Any) -> str:
    """The default as --help and the docs show it: `Setting.shown`, or the value as the command line spells it;
    "" where there is nothing to show (no value, an empty one, False)."""
    if spelling.shown:
        return spelling.shown
    if default is MISSING or default is None or default is False or default in ((), {}, ""):
        return ""
    if dataclasses.is_dataclass(default):
        return ""
    texts = cli_texts(spelling, default)
    return " ".join(texts) if texts else ""


def type_name(value: Any) -> str:
    """A TOML value's kind as a message says it: "a string", "an integer", "a table"..."""
    names = {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "a list",
             dict: "a table"}
    return names.get(type(value), type(value).__name__)


def toml_literal(value: object) -> str:
    """A TOML literal for a str, number, bool or list of them (JSON's spelling is TOML's for these)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_literal(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_toml_key(k)} = {toml_literal(v)}" for k, v in value.items()) + " }"
    return json.dumps(value if isinstance(value, (int, str)) else str(value))


def _toml_key(key: object) -> str:
    text = str(key)
    return text if text.replace("_", "").replace("-", "").isalnum() else json.dumps(text)


def toml_text_value(text: str) -> str:
    """A value written as text (freeze's ``--set name=VALUE``) as it reads in TOML: true/false and numbers bare,
    anything else quoted."""
    if text in ("true", "false"):
        return text
    try:
        float(text)
    except ValueError:
        return toml_literal(text)
    return text


def flag_args(options: Any, *, skip: tuple[str, ...] = (),
              values: dict[str, Any] | None = None) -> list[str]:
    """The command-line flags that give `options`: each flag whose field differs from its default, nested options
    included (a nested optional that is set gives its switch), in field order. `skip` names fields (by their path,
    ``aipp__preprocessing__resize`` or a top-level name) left out; `values` replaces a field's value as the command
    line spells it (a path resolved, say), by the same names."""
    args: list[str] = []
    given = values or {}
    for flag in flagged(type(options)):
        if flag.name in skip or flag.path[0] in skip:
            continue
        value = _value_at(options, flag.path)
        if value is _ABSENT:
            continue
        spelling = flag.setting
        if flag.switch:
            if value is not None and not _enabled_by_another(flag, value):
                args.append(spelling.flag or "")
            continue
        if value == default_of(flag.item) and not spelling.always:
            continue
        value = given.get(flag.name, value)
        if isinstance(value, bool):
            if value and spelling.flag is not None:
                args.append(spelling.flag)
            elif not value and spelling.negative is not None:
                args.append(spelling.negative)
        elif value is not None and spelling.flag is not None:
            texts = cli_texts(spelling, value)
            args += [part for text in texts for part in (spelling.flag, text)] if (
                spelling.repeat or isinstance(value, dict)) else [spelling.flag, *texts]
    return args


_ABSENT: Any = object()


def _value_at(options: Any, path: tuple[str, ...]) -> Any:
    """The value at `path`, or _ABSENT where a nested optional on the way is None."""
    value = options
    for index, name in enumerate(path):
        if value is None:
            return _ABSENT
        value = getattr(value, name)
        if value is None and index < len(path) - 1:
            return _ABSENT
    return value


def _enabled_by_another(flag: Flagged, nested: Any) -> bool:
    """Whether a nested optional is switched on by one of its own fields (--aipp-config FILE), not its switch."""
    return any(setting_of(f).enables and getattr(nested, f.name) is not None for f in dataclasses.fields(nested))


def toml_fields(cls: type) -> Iterator[tuple[Field[Any], Setting, type]]:
    """The fields of `cls` the pipeline file takes, with those of inline nested classes in their place: (field,
    setting, the class that declares it)."""
    for item in dataclasses.fields(cls):
        spelling = described(cls, item)
        if spelling.toml is None:
            continue
        inner = nested_class(cls, item)
        if inner is not None and spelling.inline:
            if is_optional(field_types(cls)[item.name]):
                yield item, spelling, cls  # the switch (aipp = true), then the nested keys
            yield from ((f, s, owner) for f, s, owner in toml_fields(inner)
                        if not spelling.only or f.name in spelling.only)
            continue
        yield item, spelling, cls


def template_lines(cls: type, written: dict[str, Any] | None = None,
                   describe: Callable[[str], list[str]] | None = None) -> list[str]:
    """The lines of `cls`'s table in a pipeline template: each key the file takes, commented out at its default
    with its help beside it, or written out when `written` gives its value; `describe(key)` adds comment lines
    before a key. A nested table of its own ([data.preprocessing]) is written by its own template_lines."""
    lines: list[str] = []
    keys = [(item, spelling, owner) for item, spelling, owner in toml_fields(cls)
            if not (nested_class(owner, item) is not None and not spelling.inline)]
    shown = [_template_value(item, spelling, owner) for item, spelling, owner in keys]
    width = max((len(f"# {spelling.toml} = {value}") for (item, spelling, _), value in zip(keys, shown, strict=True)
                 if value is not None), default=0)
    for (_item, spelling, _owner), value in zip(keys, shown, strict=True):
        lines += describe(spelling.toml or "") if describe is not None else []
        if written is not None and spelling.toml in written:
            text = f"{spelling.toml} = {toml_literal(written[spelling.toml])}"
        elif value is None:
            lines.append(f"# {spelling.toml}: left out = {spelling.help}" if spelling.help else f"# {spelling.toml}")
            continue
        elif value == "":
            continue  # a table of its own kind (thresholds): its describe() lines show an example
        else:
            text = f"# {spelling.toml} = {value}"
        lines.append(f"{text.ljust(width)}  # {spelling.help}" if spelling.help else text)
    return lines


def _template_value(item: Field[Any], spelling: Setting, owner: type) -> str | None:
    """The TOML the template shows for a key at its default: None when TOML cannot write it (left out), "" for a
    key its describe() lines show instead."""
    default = default_of(item)
    if nested_class(owner, item) is not None:  # an inline optional's switch: off
        return toml_literal(False)
    if default is None and spelling.example is not NO_UNSET:
        return toml_literal(spelling.example)
    if default is None and spelling.unset is NO_UNSET:
        return None
    shown = spelling.unset if default is None else default
    if isinstance(shown, dict) or dataclasses.is_dataclass(shown):
        return ""
    if default is MISSING:
        return None
    return toml_literal(shown)


ALLOW_HOST_OPS_HELP = ("Run a graph that holds ops acting on this machine (reading or writing files, Python callbacks, "
                       "the network: `infer inspect` lists them), which is refused otherwise. Only for a model whose "
                       "author you trust.")


def allow_host_ops_setting() -> Any:
    """The `allow_host_ops` field as every stage that runs or loads a graph declares it (freeze, convert, run,
    compare, tune-precision): ``--allow-host-ops``, the flag ckpt2pb's refusals name (`ckpt2pb.host_ops.ALLOW_FLAG`,
    held equal by tests/ckpt2pb/test_host_ops.py)."""
    return setting(False, help=ALLOW_HOST_OPS_HELP)
