"""Docs cannot drift: every command the `infer` app registers has help text and is shown in the README."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import typer
import typer.main

from infer.cli.app import app

README = Path(__file__).resolve().parents[1] / "README.md"


def _commands(group: Any, prefix: str) -> list[tuple[str, Any]]:
    """(``infer pipeline run``, command) for every command and sub-group, depth first."""
    found = []
    for name, command in sorted(group.commands.items()):
        path = f"{prefix} {name}"
        found.append((path, command))
        if hasattr(command, "commands"):
            found += _commands(command, path)
    return found


COMMANDS = _commands(typer.main.get_group(app), "infer")


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


def test_ci_runs_the_readme_test_command() -> None:
    """CI must run exactly what the README tells a newcomer to run."""
    readme_lines = README.read_text().splitlines()
    test_lines = [line for line in readme_lines if "pip install -e" in line and "pytest" in line]
    assert len(test_lines) == 1, test_lines
    ci_script = (README.parent / ".ci" / "run").read_text().splitlines()
    assert test_lines[0].strip() in [line.strip() for line in ci_script]
