"""Where the CLI writes: rich consoles made per call, so output follows sys.stdout/sys.stderr as they are now."""

from __future__ import annotations

import json
import logging
import sys
from typing import Any

from rich.console import Console


def out() -> Console:
    return Console(file=sys.stdout, soft_wrap=True, highlight=False)


def err() -> Console:
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
