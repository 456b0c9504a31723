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

from infer.compare.compare import CompareOptions
from infer.convert import ConvertOptions
from infer.data.sources.open import ImageOptions
from infer.pipeline.calls import compare_options, convert_options, image_options
from infer.pipeline.config import PipelineConfig, config_from_dict
from infer.pipeline.stages import run_options
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
