"""Runs the `infer` command in-process, the way a user's shell would, and captures what it prints."""

from __future__ import annotations

import os
from dataclasses import dataclass

import pytest

from infer.cli.app import main

Arg = str | os.PathLike[str]
"""A command-line argument; paths may be passed as they are, since run_cli makes every argument a string."""


@dataclass(frozen=True)
class Outcome:
    code: int
    out: str
    err: str

    @property
    def verdict(self) -> str:
        """compare's verdict as one line: its first line (PASSED or FAILED: ...) and the lines indented below it
        (every reason, the cause, what was compared with what, the worst sample), joined by " | "."""
        lines = self.out.splitlines()
        start = next((i for i, line in enumerate(lines) if line.startswith(("PASSED", "FAILED"))), None)
        assert start is not None, f"no verdict in:\n{self.out}"
        block = [lines[start]]
        for line in lines[start + 1:]:
            if not line.startswith("  "):
                break
            block.append(line.strip())
        return " | ".join(block)

    @property
    def error_line(self) -> str:
        """The `error: ...` line, which every refusal prints exactly once."""
        lines = [line for line in self.err.splitlines() if line.startswith("error: ")]
        assert len(lines) == 1, f"expected one error line, stderr was:\n{self.err}"
        return lines[0]


def run_cli(capsys: pytest.CaptureFixture[str], *args: Arg) -> Outcome:
    capsys.readouterr()
    code = 0
    try:
        main([str(a) for a in args])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    captured = capsys.readouterr()
    return Outcome(code=code, out=captured.out, err=captured.err)
