"""The one way this toolkit runs an external tool (atc, msame, ais_bench).

An argv list, never a shell string; output captured and streamed line by line to the log; a timeout that ends a
hang; and typed errors carrying the tail of the tool's output, so no raw CalledProcessError reaches a user.
"""

from __future__ import annotations

import logging
import os
import shlex
import shutil
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from binio.errors import InferError

log = logging.getLogger(__name__)
_TAIL_LINES = 20


class ToolError(InferError):
    """An external tool that is missing, hung, or failed."""


@dataclass(frozen=True)
class ToolResult:
    argv: tuple[str, ...]
    returncode: int
    output: str  # stdout and stderr interleaved, as the user would have seen them
    seconds: float

    @property
    def lines(self) -> list[str]:
        return self.output.splitlines()

    def tail(self, count: int = _TAIL_LINES) -> str:
        return "\n".join(self.lines[-count:])


def quote_command(argv: Sequence[str]) -> str:
    """The argv as one line a user can paste into a shell."""
    return shlex.join(argv)


def find_tool(name: str, *, extra_dirs: Sequence[Path] = ()) -> Path | None:
    """The executable on PATH, else in `extra_dirs` (e.g. under ASCEND_TOOLKIT_HOME), else None."""
    found = shutil.which(name)
    if found:
        return Path(found)
    for folder in extra_dirs:
        candidate = Path(folder) / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def run_tool(
    argv: Sequence[str],
    *,
    timeout: float,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> ToolResult:
    """Runs `argv` to completion; returns its exit code and output, whatever the code (callers judge success).

    Raises `ToolError` when the executable cannot be started or does not finish within `timeout` seconds.
    """
    args = [str(a) for a in argv]
    log.info("running: %s", quote_command(args))
    if cwd is not None and not Path(cwd).is_dir():
        raise ToolError(f"{cwd}: working folder for {Path(args[0]).name} does not exist")
    start = time.monotonic()
    try:
        process = subprocess.Popen(
            args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env=None if env is None else dict(env), cwd=cwd, text=True, errors="replace", bufsize=1,
        )
    except FileNotFoundError:
        raise ToolError(f"{args[0]}: executable not found") from None
    except PermissionError:
        raise ToolError(f"{args[0]}: not executable (permission denied)") from None

    lines: list[str] = []
    tool = Path(args[0]).name

    def pump() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)
            log.debug("%s: %s", tool, line.rstrip("\n"))

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        returncode = process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        reader.join(timeout=5)
        tail = "\n".join("".join(lines).splitlines()[-_TAIL_LINES:])
        raise ToolError(
            f"{tool}: no result after {timeout:g} s; stopped it. Last output:\n{tail}" if tail
            else f"{tool}: no result after {timeout:g} s and no output; stopped it",
            hint="raise the timeout if the model is large, or run the command by hand to see where it hangs",
        ) from None
    reader.join()
    seconds = time.monotonic() - start
    log.info("%s exited %d after %.1f s", tool, returncode, seconds)
    return ToolResult(argv=tuple(args), returncode=returncode, output="".join(lines), seconds=seconds)
