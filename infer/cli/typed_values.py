"""Values that already have their parameter's type skip typer's pydantic coercion, so `--help` imports no pydantic.

typer (0.29 and later) coerces every parameter's value through a pydantic TypeAdapter, built the first time the
parameter is processed. Parsing `infer <command> --help` processes the root's flags (-v's count, a bool), whose
values click has already typed, and that alone imports pydantic: about a third of `--help`'s time, and a tenth
of a small dump-bin's. Here a parameter of type bool, int, float or str with no constraint (min, max, a parser)
returns a value of exactly that type as it is, which is what pydantic returns for it, and a plainly written
number (``16``, ``-0.5``, ``1e-3``) as int() / float() read it, as pydantic does; a list[str] of strings
becomes the list typer's adapter makes of it; a path given as text becomes a Path (pydantic's lax Path is
``Path(text)``) and then goes through typer's own path checks (exists, dash, resolve), which need no pydantic for a
Path, and a list[Path] (a repeated path option) a list of them. Any other value is handed to the adapter typer
builds, so messages for bad values are typer's own. On a typer without this machinery, nothing changes.

Why typer's private modules (`typer._coercion`, `typer._param_types`): its public API has no way to give a parameter
a coercion without pydantic. Every parameter but a file is coerced through `typer._adapters.try_build_adapter`,
which imports pydantic, whatever `parser=` or `click_type=` says, and the root's own flags are processed (at their
defaults) before any command's --help is printed. The public way costs, measured with typer 0.29.2 (15 alternating
runs each, on 2 cores under load): `infer dump-bin --help` 0.41 s at best and 0.58 s median with this pass-through,
0.85 s and 1.21 s with typer's own coercion (`infer --help` alone processes no parameter: 0.35 s either way). The
imports are guarded: where typer's internals differ, its own coercion runs, slower but whole, and
tests/test_startup.py's pydantic test fails to say so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args, get_origin

try:  # typer's internals (why: above): guarded, the rest of the CLI needs none of them
    from typer._coercion import RuntimeParam, build_runtime_param
    from typer._param_types import coerce_cli_path
except ImportError:  # pragma: no cover - older typer coerces through click's types, without pydantic
    RuntimeParam = None  # type: ignore[assignment,misc]

_PLAIN_TYPES = (bool, int, float, str)
# Numbers written plainly, which int() / float() and pydantic read alike; anything else (1_000, 0x10, nan) is left
# to typer's adapter.
_PLAIN_NUMBER = {int: re.compile(r"[+-]?[0-9]+"),
                 float: re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")}


def _define_pass_through() -> Any:
    """The pass-through class, or None where typer's RuntimeParam is not the frozen dataclass it is in 0.29
    (a later typer that changed it falls back to its own coercion instead of failing at start-up)."""
    if RuntimeParam is None:
        return None
    try:
        return _pass_through_class()
    except (TypeError, AttributeError):  # pragma: no cover - a typer whose internals differ
        return None


def _pass_through_class() -> Any:
    @dataclass(frozen=True)
    class _TypedPassThrough(RuntimeParam):
        """A value of exactly the annotated type as it is; anything else through typer's own coercion."""

        descriptor: Any = None
        built: list[Any] = field(default_factory=list)  # typer's RuntimeParam, built on first need

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            if type(value) is self.annotation:
                return value
            if type(value) is str and self.annotation in (int, float) and _PLAIN_NUMBER[self.annotation].fullmatch(
                    value):
                return self.annotation(value)
            if self.annotation == list[str] and isinstance(value, (list, tuple)) and all(
                    type(item) is str for item in value):
                return list(value)
            if _is_path_list(self.annotation) and isinstance(value, (list, tuple)) and all(
                    type(item) is str for item in value):
                try:  # each item as a lone path of the same parameter is (pydantic's list of lax Paths)
                    return [coerce_cli_path(Path(item), self.parameter_info, path_type=Path, param=param, ctx=ctx)
                            for item in value]
                except TypeError:  # pragma: no cover - a typer whose coerce_cli_path takes other arguments
                    pass
            path_type: Any = self.parameter_info.path_type or self.annotation
            if _is_path(path_type) and type(value) is str:
                try:
                    return coerce_cli_path(path_type(value), self.parameter_info, path_type=path_type, param=param,
                                           ctx=ctx)
                except TypeError:  # pragma: no cover - a typer whose coerce_cli_path takes other arguments
                    pass
            if not self.built:
                self.built.append(build_runtime_param(self.descriptor))
            return self.built[0]._coerce_value(value, param=param, ctx=ctx)

    return _TypedPassThrough


_TypedPassThrough = _define_pass_through()


def _is_path(annotation: Any) -> bool:
    return get_origin(annotation) is None and isinstance(annotation, type) and issubclass(annotation, Path)


def _is_path_list(annotation: Any) -> bool:
    """list[Path]: a repeated path option (compare's --input and --actual)."""
    return get_origin(annotation) is list and len(get_args(annotation)) == 1 and _is_path(get_args(annotation)[0])


def pass_typed_values_through(param: Any) -> None:
    """Gives `param` the pass-through coercion when it is typer's and of a type handled here (bool, int, float, str,
    list[str], a Path) with no constraint that needs typer's adapter."""
    if _TypedPassThrough is None or getattr(param, "_runtime_param", "absent") is not None:
        return  # not typer's parameter, or its coercion is built already
    descriptor = getattr(param, "type_descriptor", None)
    info = getattr(descriptor, "parameter_info", None)
    annotation = getattr(descriptor, "annotation", None)
    if info is None or not (annotation in _PLAIN_TYPES or annotation == list[str] or _is_path(annotation)
                            or _is_path_list(annotation)):
        return
    if getattr(descriptor, "file_annotation", None) is not None or any(
            getattr(info, name, None) is not None for name in ("parser", "min", "max", "click_type")):
        return
    try:
        param._runtime_param = _TypedPassThrough(parameter_info=info, annotation=annotation, descriptor=descriptor)
    except TypeError:  # pragma: no cover - a typer whose RuntimeParam takes other fields: its own coercion stays
        return


def typed_values_pass_through(command: Any) -> None:
    """`pass_typed_values_through` for `command`'s parameters and for its help option, which click makes on first
    use (from the context's option names), so it is wrapped as it is made."""
    for param in command.params:
        pass_typed_values_through(param)
    make_help_option = getattr(command, "get_help_option", None)
    if RuntimeParam is None or make_help_option is None:
        return

    def get_help_option(ctx: Any) -> Any:
        option = make_help_option(ctx)
        if option is not None:
            pass_typed_values_through(option)
        return option

    command.get_help_option = get_help_option
