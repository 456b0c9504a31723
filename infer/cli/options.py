"""A command's flags, derived from the options dataclasses it takes: the fields' `setting(...)` is the only place a
flag, its help, its default and how its text becomes a value are written (`infer._option_fields`).

`takes_options(options=ConvertOptions)` gives the command one parameter per flag of ConvertOptions (nested options
included) in place of its own ``options`` parameter, and calls it with the ConvertOptions those flags build. Every
derived flag defaults to None, so only what the user typed reaches the options (Polygraphy's CLI does the same):
a flag left out is the library's default, which --help shows from the field itself.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import typer

from binio.errors import InferError
from infer._option_fields import (
    Flagged,
    default_of,
    field_types,
    flagged,
    is_optional,
    nested_class,
    setting_of,
    shown_default,
    without_none,
)

Command = TypeVar("Command", bound=Callable[..., Any])
_SCALARS = (bool, int, float, str)


def _cli_type(flag: Flagged) -> Any:
    """The type typer parses the flag's text into: the field's own for a scalar or a path, else text that the
    field's `parse` (or the default one for its kind) reads."""
    if flag.switch:
        return bool
    kind = without_none(field_types(flag.owner)[flag.item.name])
    if flag.setting.parse is not None or typing.get_origin(kind) in (tuple, dict):
        return list[str] if flag.setting.repeat else str
    if kind in _SCALARS or kind is Path:
        return kind
    return str


def parameter(flag: Flagged) -> inspect.Parameter:
    """The typer parameter of one flag: None unless given (a plain bool flag: False)."""
    spelling = flag.setting
    kind = _cli_type(flag)
    names = [name for name in (spelling.flag, spelling.short) if name]
    negative_only = spelling.flag is None and spelling.negative is not None  # --no-verify: its default goes unsaid
    shown = "" if flag.switch or negative_only else shown_default(spelling, default_of(flag.item))
    # the default in the help's own words (click would put a text default in parentheses)
    common: dict[str, Any] = {"help": f"{spelling.help}  [default: {shown}]" if shown else spelling.help,
                              "show_default": False}
    annotation: Any
    if kind is bool and not flag.switch and spelling.flag is not None and spelling.negative is not None:
        annotation, default = bool | None, typer.Option(None, f"{spelling.flag}/{spelling.negative}", **common)
    elif kind is bool:
        declared = names if spelling.flag is not None or flag.switch else [spelling.negative or ""]
        annotation, default = bool, typer.Option(False, *declared, **common)
    elif kind == list[str]:
        annotation, default = list[str], typer.Option([], *names, metavar="<str>", **common)
    elif default_of(flag.item) is dataclasses.MISSING or spelling.required:
        annotation, default = kind, typer.Option(..., *names, **{**common, "show_default": False})
    else:
        annotation, default = kind | None, typer.Option(None, *names, **common)
    return inspect.Parameter(flag.name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)


def _given(value: Any, flag: Flagged) -> bool:
    """Whether the user typed the flag: None is "left out"; a plain flag's False too, but a --x/--no-x flag's False
    is the user's --no-x."""
    if value is None or value == []:
        return False
    return value is not False or (flag.setting.flag is not None and flag.setting.negative is not None
                                  and not flag.switch)


def _value(flag: Flagged, given: Any) -> Any:
    """A given flag's value as its field holds it."""
    spelling = flag.setting
    if spelling.parse is not None:
        return spelling.parse(given, spelling.flag or "")
    kind = without_none(field_types(flag.owner)[flag.item.name])
    if kind is bool and spelling.flag is None:  # --no-verify: the field is False
        return False
    if typing.get_origin(kind) is tuple:
        item = typing.get_args(kind)[0]
        texts = given if isinstance(given, list) else [part.strip() for part in given.split(",") if part.strip()]
        return tuple(_item(text, item, spelling.flag or "", given) for text in texts)
    if typing.get_origin(kind) is dict:
        return dict(_pair(text, spelling.flag or "") for text in given)
    return given


def _item(text: str, kind: Any, flag: str, given: Any) -> Any:
    try:
        return kind(text)
    except ValueError:
        written = ",".join(given) if isinstance(given, list) else given
        names = {int: "whole numbers", float: "numbers"}.get(kind, "values")
        raise InferError(f"{flag} {written}: expected {names} separated by commas") from None


def _pair(text: str, flag: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise InferError(f"{flag} {text}: expected NAME=VALUE")
    return name, value


def build(cls: type, given: dict[str, Any], path: tuple[str, ...] = ()) -> Any:
    """The `cls` the given flags describe (`given`: parameter name -> what typer parsed), its defaults elsewhere."""
    return _build(cls, given, path)[0]


def _build(cls: type, given: dict[str, Any], path: tuple[str, ...]) -> tuple[Any, list[str]]:
    """(the options, the flags given for them)."""
    values: dict[str, Any] = {}
    typed: list[str] = []
    flags = {flag.path: flag for flag in flagged(cls, path)}
    for item in dataclasses.fields(cls):
        here = (*path, item.name)
        inner = nested_class(cls, item)
        if inner is not None and setting_of(item).flag is not None:
            nested, nested_typed = _build_nested(cls, item, inner, given, here, flags.get(here))
            typed += nested_typed
            if nested is not _LEFT_OUT:
                values[item.name] = nested
            continue
        flag = flags.get(here)
        if flag is None or not _given(given.get(flag.name), flag):
            continue
        values[item.name] = _value(flag, given[flag.name])
        typed.append(flag.setting.flag or flag.setting.negative or "")
    return cls(**values), typed


_LEFT_OUT: Any = object()


def _build_nested(cls: type, item: dataclasses.Field[Any], inner: type, given: dict[str, Any],
                  here: tuple[str, ...], switch: Flagged | None) -> tuple[Any, list[str]]:
    nested, typed = _build(inner, given, here)
    spelling = setting_of(item)
    if not is_optional(field_types(cls)[item.name]):
        return (nested if typed else _LEFT_OUT), typed
    switched = switch is not None and _given(given.get(switch.name), switch)
    enabled = any(setting_of(f).enables and getattr(nested, f.name) not in (None, default_of(f))
                  for f in dataclasses.fields(inner))
    if switched or enabled:
        return nested, [*typed, *([spelling.flag or ""] if switched else [])]
    if typed:
        reason, hint = spelling.needs
        # no switch of its own (--host): the fields that switch it on are what is missing
        missing = spelling.flag if spelling.switch else " or ".join(
            setting_of(f).flag or "" for f in dataclasses.fields(inner) if setting_of(f).enables)
        raise InferError(f"{', '.join(typed)} without {missing}" + (f": {reason}" if reason else ""),
                         hint=hint or f"add {missing}")
    return None, []


def takes_options(**classes: type) -> Callable[[Command], Command]:
    """Gives the command the flags of each options class in place of its parameter of that name, and calls it
    with the options they build: ``@takes_options(options=ConvertOptions)``."""

    def decorate(command: Command) -> Command:
        hints = typing.get_type_hints(command)
        own = [p.replace(annotation=hints.get(p.name, p.annotation))
               for p in inspect.signature(command).parameters.values() if p.name not in classes]
        derived = {key: [parameter(flag) for flag in flagged(cls)] for key, cls in classes.items()}
        names = [p.name for params in derived.values() for p in params]
        clashing = {name for name in names if names.count(name) > 1} | {p.name for p in own} & set(names)
        assert not clashing, f"{command.__name__}: parameters named twice: {sorted(clashing)}"

        @functools.wraps(command)
        def invoke(*args: Any, **kwargs: Any) -> Any:
            built = {key: build(cls, {p.name: kwargs.pop(p.name) for p in derived[key]})
                     for key, cls in classes.items()}
            return command(*args, **kwargs, **built)

        parameters = own + [p for params in derived.values() for p in params]
        invoke.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
        invoke.__annotations__ = {p.name: p.annotation for p in parameters} | {"return": None}
        del invoke.__wrapped__  # what typer reads is the signature above
        return typing.cast(Command, invoke)

    return decorate
