"""Finding ATC, running it through the one subprocess wrapper, and judging its result by what it printed.

ATC can exit 0 without converting, so success needs all three: exit 0, ``ATC run success`` printed, the .om on
disk. On failure its E/EZ error codes are read from the output and the common ones explained.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from atc_wrap.errors import ConvertError
from binio.process import ToolResult, find_tool, run_tool

SUCCESS_LINE = "ATC run success"
ERROR_MARK = "[ERROR]"  # GE's log lines of an error: a failure, whatever the exit code and the success line
_CODE = re.compile(r"\b(E[0-9A-Z]\d{4})\b")
HINTS: dict[str, str] = {
    "E10016": "a node named in --input_shape or --out_nodes is not in the pb; infer inspect lists its nodes, "
              "and re-running infer freeze rewrites the contract from the graph",
    "E10002": "ATC rejected --input_shape: every name must be a placeholder of the pb and every dim a number "
              "(-1 only with a dynamic option); re-run infer freeze so the contract matches the pb",
    "E10031": "--dynamic_batch_size needs an input whose batch dim is -1: infer freeze --batch -1 keeps it unknown",
    "E10001": "ATC rejected an option value (the message names it): check the soc version, precision mode and "
              "file paths",
    "EZ3003": "an op has no kernel for this chip and precision: try --precision-mode allow_fp32_to_fp16 or "
              "allow_mix_precision, --op-select-implmode, or replace the op before freezing",
    "E19010": "ATC has no TensorFlow parser for an op type in the graph: replace the op before freezing, or "
              "install a custom op plugin",
}
HINTS["E10011"] = HINTS["E10002"]


@dataclass(frozen=True)
class AtcRun:
    """A successful ATC run."""

    argv: tuple[str, ...]
    om: Path
    seconds: float
    warnings: tuple[str, ...]  # W-coded lines ATC printed


# Where ATC lives inside a CANN toolkit, by CANN release; infer doctor looks in the same order.
ATC_SUBDIRS = ("compiler/bin", "atc/bin", "bin")


def toolkit_dirs(environ: dict[str, str] | None = None) -> list[Path]:
    """Where a CANN toolkit keeps atc, under ASCEND_TOOLKIT_HOME (set by set_env.sh)."""
    env = os.environ if environ is None else environ
    home = env.get("ASCEND_TOOLKIT_HOME", "")
    if not home:
        return []
    return [Path(home) / sub for sub in ATC_SUBDIRS]


def find_atc() -> Path | None:
    return find_tool("atc", extra_dirs=toolkit_dirs())


def require_atc() -> Path:
    found = find_atc()
    if found is None:
        where = "PATH" + (f" or {os.environ['ASCEND_TOOLKIT_HOME']}" if os.environ.get("ASCEND_TOOLKIT_HOME")
                          else " (ASCEND_TOOLKIT_HOME is not set)")
        raise ConvertError(
            f"atc: not found on {where}; ATC comes with Ascend's CANN toolkit",
            hint="source the toolkit's set_env.sh; --target onnx converts to the ONNX Runtime stand-in instead, "
                 "and --dry-run prints the ATC command to run on an Ascend machine",
        )
    return found


class AtcExecutor(Protocol):
    """Runs an ATC argv to its end and returns what it did, leaving the om at `om` when ATC wrote one: here
    (`run_tool` in `cwd`), or elsewhere (an Ascend host over SSH, `infer.remote`) with the om fetched back."""

    def __call__(self, argv: Sequence[str], *, timeout: float, cwd: Path, om: Path) -> ToolResult: ...


def run_here(argv: Sequence[str], *, timeout: float, cwd: Path, om: Path) -> ToolResult:
    """ATC on this machine."""
    return run_tool(argv, timeout=timeout, cwd=cwd)


def run_atc(argv: Sequence[str], om: Path, *, timeout: float, execute: AtcExecutor = run_here) -> AtcRun:
    """Runs ATC's `argv` (`atc_wrap.atc.command.atc_argv`), which writes `om`, through `execute` (here by default);
    returns only when ATC converted, else raises `ConvertError` naming its error codes."""
    try:
        om.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConvertError(f"{om.parent}: cannot create the output folder ({exc.strerror})") from None
    before = om.stat().st_mtime_ns if om.exists() else None
    try:
        result = execute(argv, timeout=timeout, cwd=om.parent, om=om)
        judge_output(result, om)
    except BaseException:
        # Leave no om behind that this failed run wrote, so nobody runs a half-converted model.
        if om.exists() and om.stat().st_mtime_ns != before:
            om.unlink()
        raise
    warnings = tuple(line.strip() for line in result.lines if re.match(r"\s*W\d{5}\b", line))
    return AtcRun(argv=result.argv, om=om, seconds=result.seconds, warnings=warnings)


def error_codes(output: str) -> tuple[str, ...]:
    """The E/EZ codes ATC printed, first seen first."""
    return tuple(dict.fromkeys(_CODE.findall(output)))


def judge_output(result: ToolResult, om: Path) -> None:
    printed_success = any(SUCCESS_LINE in line for line in result.lines)
    error_line = next((line.strip() for line in result.lines if ERROR_MARK in line), None)
    if result.returncode == 0 and printed_success and om.is_file() and error_line is None:
        return
    codes = error_codes(result.output)
    if codes:
        first = next(line.strip() for line in result.lines if codes[0] in line)
        hints = [f"{code}: {HINTS[code]}" for code in codes if code in HINTS]
        raise ConvertError(f"atc failed (exit {result.returncode}): {first}",
                           hint="; ".join(hints) or _tail_hint(result))
    if result.returncode != 0:
        raise ConvertError(f"atc failed (exit {result.returncode}) without an error code", hint=_tail_hint(result))
    if error_line is not None:  # an error it logged, whatever else it printed (its success line, even)
        also = f" (and {SUCCESS_LINE!r})" if printed_success else ""
        raise ConvertError(f"atc printed an error{also}: {error_line}",
                           hint="the om may be incomplete: fix what the error says, or run atc by hand to check")
    if not printed_success:
        raise ConvertError(f"atc exited 0 but did not print {SUCCESS_LINE!r}: the conversion did not finish",
                           hint=_tail_hint(result))
    raise ConvertError(f"atc printed {SUCCESS_LINE!r} but wrote no {om}",
                       hint="check that the output folder is writable and has space")


def _tail_hint(result: ToolResult, lines: int = 5) -> str:
    tail = [line.strip() for line in result.lines if line.strip()][-lines:]
    return ("its last lines: " + " | ".join(tail)) if tail else "it printed nothing; run it with -vv"

