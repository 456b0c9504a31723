"""What a stage's options field is called outside Python: its pipeline.toml key, its command-line flag, the one-line
help the template writes beside it, and how TOML (which has no null) spells "left out".

The options classes declare their fields with `setting(...)`; the pipeline's decoder (`infer.pipeline._decode`), the
template's commented defaults and the pipeline report's equivalent commands all read these fields, so the file, the
command line and the library cannot give one setting two names or two defaults (Polygraphy's add_to_script idea).
Standard library only: the options modules import this, and `infer --help` must not import numpy.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import MISSING, Field
from typing import Any

_KEY = "infer.setting"
NO_UNSET: Any = type("NoUnset", (), {"__repr__": lambda self: "NO_UNSET"})()  # a field TOML cannot leave None


@dataclasses.dataclass(frozen=True)
class Setting:
    """How one options field is spelled in pipeline.toml and on the command line."""

    toml: str | None  # the key in the stage's table; None: the pipeline file does not set it
    flag: str | None  # the command-line flag; None: the command takes it some other way (or not at all)
    help: str = ""  # the template's comment beside the key
    unset: Any = NO_UNSET  # the TOML value that means None ("auto", 0, ""): TOML has no null
    repeat: bool = False  # a tuple given as one flag per item (--atc-arg A --atc-arg B), else joined with commas
    negative: str | None = None  # the flag that gives False for a bool | None field (--no-expected-from-emulation)
    decode: Callable[[Any, str], Any] | None = None  # (TOML value, where) -> the field's value, for a table of its own
    always: bool = False  # given on the command line even at its default (the command's own default differs)
    example: Any = NO_UNSET  # what the template shows, commented out, for a key whose default TOML cannot write


def setting(default: Any = MISSING, *, default_factory: Any = MISSING, toml: str | bool | None = True,
            flag: str | bool | None = True, help: str = "", unset: Any = NO_UNSET, repeat: bool = False,
            negative: str | None = None, decode: Callable[[Any, str], Any] | None = None,
            always: bool = False, example: Any = NO_UNSET) -> Any:
    """A dataclass field with its Setting. ``toml=True``/``flag=True`` name it after the field (``--loop``);
    False leaves it out of the file / the command line."""
    spelling = {"toml": toml, "flag": flag, "help": help, "unset": unset, "repeat": repeat, "negative": negative,
                "decode": decode, "always": always,
                "example": example}
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


def toml_literal(value: object) -> str:
    """A TOML literal for a str, number, bool or list of them (JSON's spelling is TOML's for these)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_literal(v) for v in value) + "]"
    return json.dumps(value if isinstance(value, (int, str)) else str(value))


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


def _cli_text(value: Any) -> str:
    return repr(value) if isinstance(value, float) else str(value)


def flag_args(options: Any, *, skip: tuple[str, ...] = (),
              values: dict[str, Any] | None = None) -> list[str]:
    """The command-line flags that give `options`: each field that has a flag and differs from its default, in
    field order. `values` replaces a field's value as the command line spells it (a path resolved, say)."""
    args: list[str] = []
    for item in dataclasses.fields(options):
        spelling = setting_of(item)
        if spelling.flag is None or item.name in skip:
            continue
        value = getattr(options, item.name)
        if value == default_of(item) and not spelling.always:
            continue
        value = (values or {}).get(item.name, value)
        if isinstance(value, bool):
            if value:
                args.append(spelling.flag)
            elif spelling.negative is not None:
                args.append(spelling.negative)
        elif isinstance(value, tuple):
            args += ([part for v in value for part in (spelling.flag, _cli_text(v))] if spelling.repeat
                     else [spelling.flag, ",".join(_cli_text(v) for v in value)])
        elif value is not None:
            args += [spelling.flag, _cli_text(value)]
    return args


def template_lines(cls: type, written: dict[str, Any] | None = None,
                   describe: Callable[[str], list[str]] | None = None) -> list[str]:
    """The lines of `cls`'s table in a pipeline template: each key the file takes, commented out at its default
    with its help beside it, or written out when `written` gives its value; `describe(key)` adds comment lines
    before a key."""
    lines: list[str] = []
    width = max((len(f"# {setting_of(f).toml} = {toml_literal(default_of(f))}") for f in dataclasses.fields(cls)
                 if setting_of(f).toml is not None and default_of(f) is not MISSING
                 and not dataclasses.is_dataclass(default_of(f))), default=0)
    for item in dataclasses.fields(cls):
        spelling = setting_of(item)
        if spelling.toml is None or dataclasses.is_dataclass(default_of(item)):
            continue  # a table of its own ([data.preprocessing]) is written by its own template_lines
        lines += describe(spelling.toml) if describe is not None else []
        if written is not None and spelling.toml in written:
            text = f"{spelling.toml} = {toml_literal(written[spelling.toml])}"
            lines.append(f"{text.ljust(width)}  # {spelling.help}" if spelling.help else text)
            continue
        default = default_of(item)
        if default is None and spelling.example is not NO_UNSET:
            text = f"# {spelling.toml} = {toml_literal(spelling.example)}"
            lines.append(f"{text.ljust(width)}  # {spelling.help}" if spelling.help else text)
            continue
        if default is None and spelling.unset is NO_UNSET:
            lines.append(f"# {spelling.toml}: left out = {spelling.help}" if spelling.help else f"# {spelling.toml}")
            continue
        shown = spelling.unset if default is None else default
        if isinstance(shown, dict):
            continue  # a table of its own kind (thresholds): its describe() lines show an example
        text = f"# {spelling.toml} = {toml_literal(shown)}"
        lines.append(f"{text.ljust(width)}  # {spelling.help}" if spelling.help else text)
    return lines


def options_from(cls: type, table: Any, **given: Any) -> Any:
    """A `cls` from a pipeline table's values: each field of the same name copied (the table's spelling of None,
    `cls`'s Setting.unset, read as None), `given` for the rest (paths resolved, values built from several keys)."""
    own = {item.name: item for item in dataclasses.fields(cls)}
    values = dict(given)
    for item in dataclasses.fields(table):
        if item.name in own and item.name not in given:
            value = getattr(table, item.name)
            unset = setting_of(own[item.name]).unset
            values[item.name] = None if unset is not NO_UNSET and value == unset else value
    return cls(**values)
