"""How a path is written in what a command prints: relative to the current folder when it lies under it (what the
user typed, and what they would type next), else absolute. One rule for every line, so the same file is never
named two ways in one output."""

from __future__ import annotations

import os
import re
from pathlib import Path

_ABSOLUTE = re.compile(r"(?<![^\s(])/[^\s(),;]+")  # a word that starts with /, as infer's lines write paths


def shown_path(path: Path | str) -> str:
    """`path` for a line of output: ``out/work/report.html`` under the current folder, ``/data/x`` elsewhere.
    Lexical only (no symlink resolved, nothing read): the path the user gave stays the one they see."""
    absolute = Path(os.path.abspath(path))
    try:
        here = Path.cwd()
    except OSError:  # the current folder was removed under the process: absolute is all there is
        return str(absolute)
    try:
        relative = absolute.relative_to(here)
    except ValueError:
        return str(absolute)
    return str(relative) if relative.parts else "."


def shown_paths(line: str) -> str:
    """`line` with each absolute path in it written as `shown_path` writes it: for lines made once and shown
    later, from another folder (a pipeline stage's summary, kept in its state file with the path absolute)."""
    return _ABSOLUTE.sub(lambda found: shown_path(found.group()), line)
