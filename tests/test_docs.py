"""Docs cannot drift: every command the `infer` app registers has help text, is shown in the README and has its
guide page; every example in the README and the guide uses flags the commands take; the README stays a front
door."""

from __future__ import annotations

import re
from pathlib import Path

import typer
import typer.main

from infer.cli.app import app
from tests.help_examples import commands_of

README = Path(__file__).resolve().parents[1] / "README.md"
DOCS = README.parent / "docs"
GUIDE = sorted([README, *DOCS.glob("*.md")])  # every page whose examples a user copies
FRONT_DOOR_LINES = 250


COMMANDS = commands_of(typer.main.get_group(app), "infer")


def _documented_lines(text: str) -> list[str]:
    """Headings, and the lines of fenced code blocks: where a command is named as a title or shown in use."""
    lines, in_code = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif in_code or line.startswith("#"):
            lines.append(line)
    return lines


def test_the_app_registers_the_commands_of_every_stage() -> None:
    names = {path for path, _ in COMMANDS}
    assert {"infer doctor", "infer demo", "infer pipeline", "infer pipeline run", "infer pipeline init"} <= names


def test_every_command_and_option_has_help() -> None:
    for path, command in COMMANDS:
        assert (command.help or "").strip(), f"{path} has no help text"
        for parameter in command.params:
            if parameter.param_type_name == "option":
                assert (parameter.help or "").strip(), f"{path} {parameter.opts[0]} has no help text"


def test_every_command_is_shown_in_the_readme() -> None:
    documented = _documented_lines(README.read_text())
    missing = [path for path, _ in COMMANDS
               if not any(re.search(rf"(^|[\s`$/]){re.escape(path)}(?![\w-])", line) for line in documented)]
    assert not missing, f"not in a README heading or example: {', '.join(missing)}"


def test_every_command_has_its_guide_page() -> None:
    """`infer run` is docs/run.md, titled with the command (tune-precision's page is its own, as the README links)."""
    for path, _ in COMMANDS:
        words = path.split()
        if len(words) != 2 or words[1] == "demo":  # subcommands live on their group's page; the demo in the README
            continue
        page = DOCS / f"{words[1]}.md"
        assert page.is_file(), f"{path}: no {page.relative_to(README.parent)}"
        assert f"`{path}`" in page.read_text().splitlines()[0], f"{page.name}'s title does not name {path}"
        assert f"](docs/{page.name})" in README.read_text(), f"the README does not link {page.name}"


def test_the_readme_is_a_front_door() -> None:
    """What the tool is, the two lines, the demo, the stages and where to read more: the reference lives in docs/."""
    text = README.read_text()
    assert len(text.splitlines()) <= FRONT_DOOR_LINES
    assert not re.search(r"\bissue \d+|\bcommit [0-9a-f]{7}", text)  # development notes belong elsewhere


def test_every_relative_link_resolves() -> None:
    broken = []
    for page in GUIDE:
        text = page.read_text()
        for target in re.findall(r"\]\(([^)#:\s]+)(?:#[^)]*)?\)", text):
            if not (page.parent / target).exists():
                broken.append(f"{page.relative_to(README.parent)}: {target}")
    assert broken == []


def test_ci_runs_the_readme_test_command() -> None:
    """CI must run exactly what the README tells a newcomer to run."""
    readme_lines = README.read_text().splitlines()
    test_lines = [line for line in readme_lines if "pip install -e" in line and "pytest" in line]
    assert len(test_lines) == 1, test_lines
    ci_script = (README.parent / ".ci" / "run").read_text().splitlines()
    assert test_lines[0].strip() in [line.strip() for line in ci_script]


def _example_command_lines() -> list[list[str]]:
    """Every `infer COMMAND ...` line of the README's and the guide's code blocks, its continuation lines joined, as
    words."""
    import shlex

    lines, in_code, joined = [], False, ""
    for line in (line for page in GUIDE for line in page.read_text().splitlines()):
        if line.startswith("```"):
            in_code = not in_code
            continue
        if not in_code:
            continue
        text = joined + line.split("  #", 1)[0].strip()
        joined = text[:-1] + " " if text.endswith("\\") else ""
        if not joined and text.startswith("infer "):
            lines.append(shlex.split(text.replace("<", "").replace(">", "")))
    return lines


def test_every_flag_an_example_gives_is_one_its_command_takes() -> None:
    """The README's and the guide's examples use the flags the commands have: a flag renamed or dropped fails
    here."""
    commands = dict(COMMANDS)
    checked = 0
    for words in _example_command_lines():
        path = "infer " + words[1]
        if len(words) > 2 and f"{path} {words[2]}" in commands:
            path = f"{path} {words[2]}"
        command = commands.get(path)
        if command is None:
            continue  # the stage table's lines (`infer run  model.json + BINS -> ...`) are not commands
        taken = {opt for parameter in command.params for opt in (*parameter.opts, *parameter.secondary_opts)}
        for word in words:
            flag = word.split("=", 1)[0]
            if flag.startswith("-") and flag != "-":
                assert flag in taken, f"{' '.join(words)}: {path} takes no {flag}"
                checked += 1
    assert checked > 50


def test_every_key_the_guides_pipeline_file_sets_is_a_key_of_its_table() -> None:
    """docs/pipeline.md's pipeline.toml example reads as a pipeline file, and every key it names in a comment
    (``# device = 0``) is a key of its table too."""
    import sys

    from infer.pipeline._decode import _keys
    from infer.pipeline.config import _SECTIONS, config_from_dict
    from infer.preprocessing import ImageOptions

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    text = (DOCS / "pipeline.md").read_text().split("```toml\n", 1)[1].split("```", 1)[0]
    config = config_from_dict(tomllib.loads(text), Path("pipeline.toml"))
    assert config.model.freeze.batch == 8
    tables = {**_SECTIONS, "data.preprocessing": ImageOptions}
    table, named = "", []
    for line in text.splitlines():
        header = re.match(r"^\[([\w.]+)\]", line)
        if header:
            table = header.group(1)
        key = re.match(r"^#? ?(\w+) = ", line)
        if key and table:
            named.append((table, key.group(1)))
    assert len(named) > 20
    unknown = [f"[{t}] {k}" for t, k in named if k not in _keys(tables[t])]
    assert unknown == []
