"""The example invocations each command's --help ends with (its epilog, `infer.cli.console.examples`), read back
from the help as a user sees it."""

from __future__ import annotations

import shlex
from typing import Any

import typer.main

from infer.cli.app import make_app


def commands_of(group: Any, prefix: str) -> list[tuple[str, Any]]:
    """(``infer pipeline run``, command) for every command and group, depth first."""
    found = []
    for name, command in sorted(group.commands.items()):
        path = f"{prefix} {name}"
        found.append((path, command))
        if hasattr(command, "commands"):
            found += commands_of(command, path)
    return found


COMMANDS: dict[str, Any] = dict(commands_of(typer.main.get_group(make_app()), "infer"))


def help_examples(path: str) -> list[list[str]]:
    """The examples of command `path` (``infer compare``), each as its words, comments left out."""
    epilog = COMMANDS[path].epilog or ""
    lines = [line.strip() for line in epilog.splitlines() if line.strip().startswith("infer ")]
    return [shlex.split(line.split("  #", 1)[0]) for line in lines]
