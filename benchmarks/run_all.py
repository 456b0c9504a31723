"""Runs every stage's benchmark and prints one table, with the machine and its load average.

    python benchmarks/run_all.py            # every benchmarks/bench_*.py
    python benchmarks/run_all.py run dump   # only those whose name contains one of these words
    python benchmarks/run_all.py --quick    # small cases, few rounds (a few minutes): a check that they all run
    python benchmarks/run_all.py --markdown # the README's table on stdout (details on stderr), to paste as is

What they measure: whole `infer` commands against whole hand-written scripts doing the same job
(`benchmarks/hand/`), run in turns by `benchmarks/endtoend.py` (medians with min-max, peak RSS per process, the
load average before and after, and both sides' outputs checked equal). The convention every benchmark module
follows (and the only one):
- it is ``benchmarks/bench_<stage>.py`` and defines ``def main(quick: bool = False) -> list[tuple[str, float,
  str]]``, where ``quick`` asks for a smaller case;
- ``main()`` measures its case and its baseline in the same run, prints its own details, and returns one row
  per comparison: (name, figure, note), where the note says what the figure is (a time ratio, a speed-up, seconds)
  and which way is better, with the target;
- it runs with no arguments (``main()`` must not need sys.argv), and ``python benchmarks/bench_<stage>.py`` runs it
  too.
A benchmark that raises, or returns no rows, is listed as such; the others still run. Nothing here is a test:
timings vary from machine to machine and with the load, so results are printed for a person to read, never
asserted.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import importlib.util
import os
import platform
import subprocess
import sys
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).resolve().parent
Row = tuple[str, float, str]


def benchmark_files(words: Sequence[str] = ()) -> list[Path]:
    found = sorted(HERE.glob("bench_*.py"))
    return [p for p in found if not words or any(w in p.stem for w in words)]


def _load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"benchmarks_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path}: cannot be loaded as a module")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _rows(value: object) -> list[Row]:
    if not isinstance(value, list):
        return []
    rows = []
    for item in value:
        if isinstance(item, tuple) and len(item) == 3:
            name, ratio, note = item
            rows.append((str(name), float(ratio), str(note)))
    return rows


def run_one(path: Path, *, quick: bool = False) -> tuple[list[Row], str, float]:
    """(rows, problem, seconds): problem is "" when main() returned rows."""
    start = time.monotonic()
    argv = sys.argv
    sys.argv = [str(path)]  # a benchmark reads no arguments of ours
    try:
        returned = _load(path).main(quick=quick)
    except Exception as exc:  # one failing benchmark must not hide the others' figures
        traceback.print_exc()
        return [], f"failed: {type(exc).__name__}: {exc}", time.monotonic() - start
    finally:
        sys.argv = argv
    rows = _rows(returned)
    problem = "" if rows else "main() returned no (name, ratio, note) rows"
    return rows, problem, time.monotonic() - start


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{cpu}, {cores} cores usable, {platform.system()} {platform.machine()}, Python {platform.python_version()}"


def format_table(results: Sequence[tuple[str, list[Row], str, float]]) -> str:
    lines = []
    width = max([len(name) for _, rows, _, _ in results for name, _, _ in rows] + [9])
    lines.append(f"{'benchmark':<16} {'case':<{width}} {'figure':>8}  note")
    for module, rows, problem, seconds in results:
        if problem:
            lines.append(f"{module:<16} {'-':<{width}} {'-':>8}  {problem} ({seconds:.0f} s)")
        for name, ratio, note in rows:
            unit = " s" if note.startswith("seconds") else "x"
            lines.append(f"{module:<16} {name:<{width}} {ratio:>8.2f}{unit}  {note}")
    return "\n".join(lines)


def format_markdown(results: Sequence[tuple[str, list[Row], str, float]], command: str) -> str:
    """The same rows as a Markdown table for the README, each with the command that measures it."""
    lines = ["| benchmark | case | figure | against, target, detail | command |", "|---|---|---|---|---|"]
    for module, rows, problem, _ in results:
        where = f"`{command} {module.split('_')[0]}`"
        if problem:
            lines.append(f"| {module} | - | - | {problem} | {where} |")
        for name, ratio, note in rows:
            unit = " s" if note.startswith("seconds") else "x"
            lines.append(f"| {module} | {name} | {ratio:.2f}{unit} | {note.replace('|', '/')} | {where} |")
    return "\n".join(lines)


def commit() -> str:
    """The checkout's commit, with `+changes` when its tracked files differ from it."""
    def git(*arguments: str) -> str:
        done = subprocess.run(["git", *arguments], cwd=HERE.parent, capture_output=True, text=True, check=False)
        return done.stdout.strip() if done.returncode == 0 else ""

    head = git("rev-parse", "--short", "HEAD") or "unknown"
    return head + ("+changes" if git("status", "--porcelain", "--untracked-files=no") else "")


def readme_section(results: Sequence[tuple[str, list[Row], str, float]], command: str, base: str,
                   load: tuple[float, ...], after: tuple[float, ...]) -> str:
    """The README's "Latest full run" line and table, as `--markdown` prints them."""
    day = datetime.datetime.now(datetime.timezone.utc).strftime("%-d %B %Y")
    return (f"Latest full run: `{command}`, {day}, commit {commit()}; {machine()}. Load average (1, 5, 15 min) "
            f"{load[0]:.1f} {load[1]:.1f} {load[2]:.1f} at the start, {after[0]:.1f} {after[1]:.1f} {after[2]:.1f} "
            f"at the end (each row gives its own).\n\n{format_markdown(results, base)}")


def main(words: Sequence[str] = (), *, quick: bool = False, markdown: bool = False) -> int:
    files = benchmark_files(words)
    if not files:
        print(f"no benchmarks/bench_*.py matches {' '.join(words)}", file=sys.stderr)
        return 2
    base = "python benchmarks/run_all.py" + (" --quick" if quick else "")  # each row adds its benchmark's word
    command = " ".join([base, *words])
    results = []
    load = os.getloadavg()
    # --markdown: stdout holds the table alone; what the benchmarks print as they go goes to stderr.
    with contextlib.redirect_stdout(sys.stderr) if markdown else contextlib.nullcontext():
        for path in files:
            print(f"== {path.name}", flush=True)
            rows, problem, seconds = run_one(path, quick=quick)
            results.append((path.stem.removeprefix("bench_"), rows, problem, seconds))
    after = os.getloadavg()
    if markdown:
        print(readme_section(results, command, base, load, after))
        return 1 if any(problem for _, _, problem, _ in results) else 0
    print()
    print(f"machine: {machine()}{' (--quick: smaller cases)' if quick else ''}")
    print(f"load average (1, 5, 15 min): {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} at the start, "
          f"{after[0]:.1f} {after[1]:.1f} {after[2]:.1f} at the end")
    print(format_table(results))
    print()
    print(format_markdown(results, base))
    return 1 if any(problem for _, _, problem, _ in results) else 0


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parent))  # the benchmarks import the package from the checkout
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("words", nargs="*", help="only the benchmarks whose name contains one of these")
    parser.add_argument("--quick", action="store_true", help="small cases, few rounds: a check that they all run")
    parser.add_argument("--markdown", action="store_true",
                        help="print the README's section (run line and table) on stdout, the details on stderr")
    arguments = parser.parse_args()
    sys.exit(main(arguments.words, quick=arguments.quick, markdown=arguments.markdown))
