"""Where the CLI writes: rich consoles made per call, so output follows sys.stdout/sys.stderr as they are now."""

from __future__ import annotations

import json
import logging
import sys
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from rich.console import Console

# Help is click's plain formatter (it rewraps each docstring paragraph to the terminal, up to 120 columns), not
# typer's rich one: that imports rich's markdown, syntax and traceback modules, about 0.1 s of every --help and
# half of what a command may take to answer. The same setting gives usage errors as click's plain lines.
PLAIN_HELP: Literal[None] = None
HELP_SETTINGS: dict[str, Any] = {"help_option_names": ["-h", "--help"], "max_content_width": 120}


def out() -> Console:
    from rich.console import Console  # imported on first output: --help and argument errors never need it

    return Console(file=sys.stdout, soft_wrap=True, highlight=False)


def err() -> Console:
    from rich.console import Console

    return Console(file=sys.stderr, soft_wrap=True, highlight=False)


def print_json(document: Any) -> None:
    """Plain JSON on stdout (no colour codes), for scripts."""
    sys.stdout.write(json.dumps(document, indent=2) + "\n")
    sys.stdout.flush()


def say(message: str) -> None:
    """One plain line of progress for the user, on stderr so stdout stays clean for --json. -q (logging set to
    errors only) silences it with the warnings."""
    if logging.getLogger().isEnabledFor(logging.WARNING):
        err().print(message, markup=False)


def show(text: str) -> None:
    """One plain line of a command's result on stdout, as written (no markup, no wrapping)."""
    out().print(text, markup=False)
