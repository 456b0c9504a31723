"""Each stage's options have one set of defaults: the pipeline file's (a table left empty) and the command line's
(no flag given) are the library's own `*Options` defaults, so a setting cannot mean one thing in `pipeline.toml`
and another on the command line (issue 14: warmup was 0 in one, 1 in the other; the soc version Ascend310 in one,
none in the other)."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from infer.compare._compare import CompareOptions
from infer.convert._convert import ConvertOptions
from infer.pipeline._calls import compare_options, convert_options, image_options
from infer.pipeline._stages import run_options
from infer.pipeline.config import PipelineConfig, config_from_dict
from infer.preprocessing import ImageOptions
from infer.run.options import RunOptions


def _minimal() -> PipelineConfig:
    document = {"model": {"source": "model.ckpt", "outputs": ["probs:0"]}, "data": {"source": "random:0"}}
    return config_from_dict(document, Path("/nowhere/pipeline.toml"))


@pytest.mark.parametrize(("decode", "options"), [(convert_options, ConvertOptions()), (run_options, RunOptions()),
                                                 (compare_options, CompareOptions()), (image_options, ImageOptions())])
def test_an_empty_table_decodes_to_the_librarys_defaults(decode: Callable[[PipelineConfig], Any],
                                                         options: Any) -> None:
    decoded = decode(_minimal())
    differing = {f.name: (getattr(decoded, f.name), getattr(options, f.name)) for f in dataclasses.fields(options)
                 if getattr(decoded, f.name) != getattr(options, f.name)}
    assert not differing


def _cli_defaults(module: str, command: str) -> dict[str, Any]:
    """The default of every typer option of a command, by parameter name."""
    import importlib

    function = getattr(importlib.import_module(module), command)
    return {name: p.default.default for name, p in inspect.signature(function).parameters.items()
            if hasattr(p.default, "param_decls") and p.default.default is not ...}


@pytest.mark.parametrize(("module", "command", "options"), [
    ("infer.cli.convert", "convert", ConvertOptions()), ("infer.cli.run", "run", RunOptions()),
    ("infer.cli.compare", "compare", CompareOptions()), ("infer.cli.dump_bin", "dump_bin", ImageOptions()),
    ("infer.cli.convert", "convert", ImageOptions()),  # --aipp's --color/--scale
])
def test_no_flag_means_the_librarys_default(module: str, command: str, options: Any) -> None:
    flags = _cli_defaults(module, command)
    # --aipp is the switch that builds ConvertOptions.aipp (an AippOptions, or None), not the value itself
    shared = [f.name for f in dataclasses.fields(options) if f.name in flags and f.name != "aipp"]
    assert shared  # the test compares something
    scalar = (bool, int, float, str, type(None))
    differing = {name: (flags[name], getattr(options, name)) for name in shared
                 if isinstance(getattr(options, name), scalar) and flags[name] != getattr(options, name)}
    assert not differing


def _cli_flags(module: str, command: str) -> dict[str, Any]:
    """Every flag of a typer command (its long spellings and a --no- form), with that option's default."""
    import importlib

    function = getattr(importlib.import_module(module), command)
    flags: dict[str, Any] = {}
    for parameter in inspect.signature(function).parameters.values():
        declared = getattr(parameter.default, "param_decls", None)
        if declared:
            for spelling in declared:
                for flag in spelling.split("/"):
                    flags[flag] = parameter.default.default
    return flags


def _tables() -> list[tuple[str, type, str, str]]:
    from infer.pipeline.config import CompareSection, ConvertSection, DataSection, ModelSection
    from infer.preprocessing import ImageOptions as Image

    return [("model", ModelSection, "infer.cli.freeze", "freeze"),
            ("data", DataSection, "infer.cli.dump_bin", "dump_bin"),
            ("data.preprocessing", Image, "infer.cli.dump_bin", "dump_bin"),
            ("convert", ConvertSection, "infer.cli.convert", "convert"), ("run", RunOptions, "infer.cli.run", "run"),
            ("compare", CompareSection, "infer.cli.compare", "compare")]


@pytest.mark.parametrize(("table", "cls", "module", "command"), _tables())
def test_every_field_is_a_key_of_its_table_and_a_flag_of_its_command(table: str, cls: type, module: str,
                                                                     command: str) -> None:
    """Each options field the pipeline file takes is a key of its table that reads back as given, and its flag
    is one the command takes (the report's equivalent command is made of these flags)."""
    from infer._option_fields import setting_of
    from infer.pipeline._decode import decode_table

    flags = _cli_flags(module, command)
    checked = 0
    for item in dataclasses.fields(cls):
        spelling = setting_of(item)
        if spelling.flag is not None:
            assert spelling.flag in flags, f"[{table}] {item.name}: {command} has no {spelling.flag}"
            if spelling.negative is not None:
                assert spelling.negative in flags, f"[{table}] {item.name}: {command} has no {spelling.negative}"
            checked += 1
    # every key at its default, written as TOML writes it, reads back as that default
    from infer._option_fields import default_of

    document: dict[str, Any] = {}
    for item in dataclasses.fields(cls):
        spelling, default = setting_of(item), default_of(item)
        if spelling.toml is None or default is None or dataclasses.is_dataclass(default):
            continue
        if default is dataclasses.MISSING:  # a required key: any value of its type
            default = ("x",) if "tuple" in str(item.type) else "x"
        document[spelling.toml] = list(default) if isinstance(default, tuple) else default
    decoded = decode_table(cls, document, Path("p.toml"), table)
    for item in dataclasses.fields(cls):
        key = setting_of(item).toml
        if key in document:
            expected = document[key]
            assert getattr(decoded, item.name) == (tuple(expected) if isinstance(expected, list) else expected), key
    assert checked


@pytest.mark.parametrize(("cls", "module", "command"), [(RunOptions, "infer.cli.run", "run"),
                                                        (ImageOptions, "infer.cli.dump_bin", "dump_bin")])
def test_a_table_that_is_the_options_has_the_commands_defaults(cls: type, module: str, command: str) -> None:
    """[run] is RunOptions and [data.preprocessing] ImageOptions: a flag left out and a key left out are the same
    default (a list flag's None is the field's default list)."""
    from infer._option_fields import default_of, setting_of

    flags = _cli_flags(module, command)
    for item in dataclasses.fields(cls):
        spelling = setting_of(item)
        if spelling.flag is None:
            continue
        given = flags[spelling.flag]
        assert given == default_of(item) or (given is None and isinstance(default_of(item), tuple)), item.name


@pytest.mark.parametrize(("cls", "module", "command"), [("DumpOptions", "infer.cli.dump_bin", "dump_bin"),
                                                        ("ScaleOptions", "infer.cli.run", "run")])
def test_options_the_pipeline_file_does_not_take_are_flags_of_their_command(cls: str, module: str,
                                                                          command: str) -> None:
    """dump-bin's own options (output, batch, samples, workers...) and run's sharding: each field's flag is one
    the command takes, with the field's default."""
    import infer
    from infer._option_fields import default_of, setting_of

    options = getattr(infer, cls)
    flags = _cli_flags(module, command)
    named = [(setting_of(f).flag, default_of(f)) for f in dataclasses.fields(options) if setting_of(f).flag]
    assert named
    for flag, default in named:
        assert flag in flags, flag
        if default is not dataclasses.MISSING and not isinstance(default, tuple) and \
                not dataclasses.is_dataclass(default):
            assert flags[flag] == default, flag
