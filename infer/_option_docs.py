"""docs/options.md, written from the options classes: each stage's flags with their pipeline.toml key, default and
help, as `infer._option_fields` declares them. tests/test_option_docs.py holds the committed page equal to this;
`python -m infer._option_docs docs/options.md` writes it again after an option changed."""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import MISSING
from pathlib import Path

from infer._option_fields import Flagged, default_of, flagged, nested_class, setting_of, shown_default

# (command, the pipeline table its options are, the options classes), in the order the stages run.
STAGES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("inspect", "", ("infer.inspect.options:InspectOptions",)),
    ("freeze", "model", ("infer.freeze.options:FreezeOptions",)),
    ("convert", "convert", ("infer.convert.options:ConvertOptions",)),
    ("dump-bin", "data", ("infer.dump_bin.options:DumpOptions",)),
    ("bin-info", "", ("infer.bin_info.options:BinInfoOptions",)),
    ("run", "run", ("infer.run.options:RunOptions", "infer.run.options:ScaleOptions")),
    ("compare", "compare", ("infer.compare.options:CompareOptions",)),
    ("tune-precision", "tune", ("infer.tune.options:TuneOptions",)),
    ("doctor", "remote", ("infer.remote.options:RemoteOptions",)),
)


def _load(where: str) -> type:
    import importlib

    module, _, name = where.partition(":")
    cls: type = getattr(importlib.import_module(module), name)
    return cls


def _flags(flag: Flagged) -> str:
    spelling = flag.setting
    names = [name for name in (spelling.short, spelling.flag, spelling.negative) if name]
    return ", ".join(f"`{name}`" for name in names)


def _default(flag: Flagged) -> str:
    default = default_of(flag.item)
    if flag.switch or default is False:
        return "off"
    if default is True:
        return "on"
    if default is MISSING or flag.setting.required:
        return "required"
    return shown_default(flag.setting, default) or "none"


def stage_table(command: str, table: str, classes: tuple[type, ...]) -> list[str]:
    heading = f"## infer {command}" + (f" · `[{table}]`" if table else "")
    lines = [heading, "", "| flag | pipeline.toml | default | what it does |", "|---|---|---|---|"]
    for cls in classes:
        for flag in flagged(cls):
            help_text = flag.setting.help.replace("|", "\\|")
            lines.append(f"| {_flags(flag)} | {_pipeline_key(cls, flag, table)} | {_default(flag)} | {help_text} |")
    return lines


def _pipeline_key(cls: type, flag: Flagged, table: str) -> str:
    """The flag's key in the pipeline file, following the fields on its path: an inline nested class's keys sit
    in the table itself, one of its own (``image``: [data.preprocessing]) in a sub-table."""
    if not table:
        return ""
    tables = [table]
    owner = cls
    for name in flag.path[:-1]:
        item = next(f for f in dataclasses.fields(owner) if f.name == name)
        spelling = setting_of(item)
        if spelling.toml is None:
            return f"({spelling.help})" if spelling.help else ""
        if not spelling.inline:
            tables.append(spelling.toml)
        inner = nested_class(owner, item)
        assert inner is not None
        owner = inner
    key = flag.setting.toml
    return f"`[{'.'.join(tables)}] {key}`" if key else ""


def render() -> str:
    lines = ["# Options", "",
             "Every option of every stage, as the stage's options class declares it (`infer/<stage>/options.py`): "
             "the flag, its key in `pipeline.toml` (where the pipeline takes it), its default and what it does. "
             "This page is written from those classes (`python -m infer._option_docs docs/options.md`), and "
             "tests/test_option_docs.py fails when it is not what they say, so it cannot drift.", ""]
    for command, table, classes in STAGES:
        lines += [*stage_table(command, table, tuple(_load(c) for c in classes)), ""]
    return "\n".join(lines).rstrip() + "\n"


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else None
    text = render()
    if target is None:
        sys.stdout.write(text)
    else:
        target.write_text(text, encoding="utf-8")
