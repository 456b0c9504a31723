"""Each stage's options are declared once, in its options dataclass: the command's flags, the pipeline file's table,
the template's comments and the equivalent command are derived from its fields, so a setting cannot mean one thing
in `pipeline.toml` and another on the command line (issue 14: warmup was 0 in one, 1 in the other; issue 26: 129
typer declarations restated the defaults and the help, and nine flags had no pipeline key)."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from pathlib import Path
from typing import Any

import pytest

from infer._option_fields import default_of, flagged, setting_of, toml_fields
from infer.cli.options import build
from infer.compare.options import CompareOptions
from infer.convert.options import ConvertOptions
from infer.dump_bin.options import DumpOptions
from infer.freeze.options import FreezeOptions
from infer.model_aipp.options import AippOptions
from infer.pipeline._decode import decode_table
from infer.pipeline.config import PipelineConfig, config_from_dict
from infer.preprocessing import ImageOptions
from infer.run.options import RunOptions, ScaleOptions
from infer.tune.options import TuneOptions

# command -> (its module and function, the options classes it takes)
COMMANDS: dict[str, tuple[str, str, tuple[type, ...]]] = {
    "freeze": ("infer.cli.freeze", "freeze", (FreezeOptions,)),
    "convert": ("infer.cli.convert", "convert", (ConvertOptions,)),
    "dump-bin": ("infer.cli.dump_bin", "dump_bin", (DumpOptions,)),
    "run": ("infer.cli.run", "run", (RunOptions, ScaleOptions)),
    "compare": ("infer.cli.compare", "compare", (CompareOptions,)),
    "tune-precision": ("infer.cli.tune_precision", "tune_precision", (TuneOptions,)),
}


def _minimal() -> PipelineConfig:
    document = {"model": {"source": "model.ckpt", "outputs": ["probs:0"]}, "data": {"source": "random:0"}}
    return config_from_dict(document, Path("/nowhere/pipeline.toml"))


@pytest.mark.parametrize(("table", "options"), [
    (lambda c: c.model.freeze, FreezeOptions(outputs=("probs:0",))), (lambda c: c.data.dump, DumpOptions()),
    (lambda c: c.data.dump.image, ImageOptions()), (lambda c: c.convert, ConvertOptions()),
    (lambda c: c.run, RunOptions()), (lambda c: c.compare, CompareOptions()), (lambda c: c.tune, TuneOptions())])
def test_an_empty_table_decodes_to_the_librarys_defaults(table: Any, options: Any) -> None:
    assert table(_minimal()) == options


def _parameters(command: str) -> dict[str, inspect.Parameter]:
    module, name, _ = COMMANDS[command]
    return dict(inspect.signature(getattr(importlib.import_module(module), name)).parameters)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_flag_of_the_options_is_a_parameter_of_its_command_with_its_help(command: str) -> None:
    """The command's parameters for its options are the options' flags, in their spelling, with their help."""
    parameters = _parameters(command)
    classes = COMMANDS[command][2]
    flags = [flag for cls in classes for flag in flagged(cls)]
    assert flags
    for flag in flags:
        parameter = parameters[flag.name]
        info = parameter.default
        spelled = {part for declared in info.param_decls for part in declared.split("/")}
        wanted = {name for name in (flag.setting.flag, flag.setting.negative, flag.setting.short) if name}
        if flag.switch:
            wanted = {name for name in (flag.setting.flag, flag.setting.short) if name}
        assert spelled == wanted, flag.name
        assert info.help.startswith(flag.setting.help), flag.name
        assert info.default in (None, False, [], ...), f"{flag.name}: the command restates a default"


@pytest.mark.parametrize("command", COMMANDS)
def test_no_flag_means_the_librarys_default(command: str) -> None:
    """What typer passes for flags left out builds the options' own defaults."""
    for cls in COMMANDS[command][2]:
        given = {name: p.default.default for name, p in _parameters(command).items()
                 if hasattr(p.default, "param_decls") and p.default.default is not ...}
        assert build(cls, given) == cls()


def test_a_given_flag_reaches_its_field_nested_ones_too() -> None:
    built = build(ConvertOptions, {"timeout": 5.0, "dynamic_batch": "1,2,4", "atc_args": ["--log=info"],
                                   "aipp": True, "aipp__preprocessing__mean": "1,2,3", "aipp__crop": "4,6"})
    assert (built.timeout, built.dynamic_batch, built.atc_args) == (5.0, (1, 2, 4), ("--log=info",))
    assert built.aipp is not None and (built.aipp.preprocessing.mean, built.aipp.crop) == ((1.0, 2.0, 3.0), (4, 6))
    assert build(FreezeOptions, {"verify": True, "assignments": ["a=1", "b=x"]}) == FreezeOptions(
        verify=False, assignments={"a": "1", "b": "x"})


def test_a_nested_flag_without_its_switch_is_refused_and_a_file_switches_it_on() -> None:
    from binio.errors import InferError

    with pytest.raises(InferError, match=r"^--mean without --aipp: these set the preprocessing AIPP does"):
        build(ConvertOptions, {"aipp__preprocessing__mean": "1"})
    built = build(ConvertOptions, {"aipp__config": Path("aipp.cfg")})
    assert built.aipp is not None and built.aipp.config == Path("aipp.cfg")


OPTIONS_WITH_TABLES: list[tuple[str, type]] = [
    ("model", FreezeOptions), ("data", DumpOptions), ("data.preprocessing", ImageOptions),
    ("convert", ConvertOptions), ("run", RunOptions), ("compare", CompareOptions), ("tune", TuneOptions)]


@pytest.mark.parametrize(("table", "cls"), OPTIONS_WITH_TABLES)
def test_every_key_reads_back_as_written(table: str, cls: type) -> None:
    """Each key of a stage's table, at its default as TOML writes it, reads back as that default."""
    document: dict[str, Any] = {}
    for item, spelling, owner in toml_fields(cls):
        default = default_of(item)
        if default is None or default is dataclasses.MISSING or dataclasses.is_dataclass(default) or \
                isinstance(default, dict) or spelling.toml is None or owner is AippOptions:
            continue
        document[spelling.toml] = list(default) if isinstance(default, tuple) else default
    assert document
    decoded = decode_table(cls, document, Path("p.toml"), table)
    assert decoded == cls()


def test_the_aipp_keys_need_aipp_and_read_back_with_it() -> None:
    from infer.pipeline._decode import ConfigError

    keys = {"aipp_input_format": "", "aipp_csc": "", "aipp_src_size": [], "aipp_crop": []}
    assert decode_table(ConvertOptions, {"aipp": True, **keys}, Path("p.toml"), "convert") == ConvertOptions(
        aipp=AippOptions())
    assert decode_table(ConvertOptions, keys, Path("p.toml"), "convert") == ConvertOptions()  # each at its default
    with pytest.raises(ConfigError, match=r"\[convert\] aipp_crop: set without aipp = true"):
        decode_table(ConvertOptions, {"aipp_crop": [2, 2]}, Path("p.toml"), "convert")


def test_the_nine_flags_the_pipeline_refused_are_keys_now() -> None:
    """convert's timeout, dynamic_batch, fusion_switch_file, allow_unknown_soc; compare's atol, rtol, workers;
    data's samples and workers (issue 26)."""
    keys = {name: {spelling.toml for _, spelling, _ in toml_fields(cls)} for name, cls in (
        ("convert", ConvertOptions), ("compare", CompareOptions), ("data", DumpOptions))}
    assert {"timeout", "dynamic_batch", "fusion_switch_file", "allow_unknown_soc"} <= keys["convert"]
    assert {"atol", "rtol", "workers"} <= keys["compare"]
    assert {"samples", "workers"} <= keys["data"]


@pytest.mark.parametrize(("table", "cls"), OPTIONS_WITH_TABLES)
def test_the_templates_comment_is_the_flags_help(table: str, cls: type) -> None:
    """`infer pipeline init` writes each key with the same help text --help shows for its flag."""
    from infer.pipeline._template import TemplateValues, render_template

    text = render_template(TemplateValues(source="model.pb", outputs=("out:0",)))
    for item, spelling, _owner in toml_fields(cls):
        if not spelling.help or dataclasses.is_dataclass(default_of(item)) or table == "model":
            continue
        assert f"  # {spelling.help}" in text or f"= {spelling.help}" in text, f"[{table}] {spelling.toml}"


def test_every_field_says_whether_it_is_a_flag_and_every_flag_has_help() -> None:
    for _, _, classes in COMMANDS.values():
        for cls in classes:
            for flag in flagged(cls):
                assert flag.setting.help, f"{cls.__name__}.{flag.name} has no help"
    assert setting_of(dataclasses.fields(RunOptions)[-1]).flag is None  # bins_made_for: the library's own
