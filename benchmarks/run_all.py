"""Runs every stage's benchmark and prints one table, with the machine and its load average.

    python benchmarks/run_all.py            # every benchmarks/bench_*.py
    python benchmarks/run_all.py run dump   # only those whose name contains one of these words
    python benchmarks/run_all.py --quick    # smaller cases, one round each: a check that they all still run

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

import importlib.util
import os
import platform
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


def main(words: Sequence[str] = (), *, quick: bool = False) -> int:
    files = benchmark_files(words)
    if not files:
        print(f"no benchmarks/bench_*.py matches {' '.join(words)}", file=sys.stderr)
        return 2
    results = []
    load = os.getloadavg()
    for path in files:
        print(f"== {path.name}", flush=True)
        rows, problem, seconds = run_one(path, quick=quick)
        results.append((path.stem.removeprefix("bench_"), rows, problem, seconds))
    print()
    print(f"machine: {machine()}{' (--quick: smaller cases)' if quick else ''}")
    after = os.getloadavg()
    print(f"load average (1, 5, 15 min): {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} at the start, "
          f"{after[0]:.1f} {after[1]:.1f} {after[2]:.1f} at the end")
    print(format_table(results))
    print()
    print(format_markdown(results, "python benchmarks/run_all.py" + (" --quick" if quick else "")))
    return 1 if any(problem for _, _, problem, _ in results) else 0


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parent))  # the benchmarks import the package from the checkout
    arguments = sys.argv[1:]
    sys.exit(main([a for a in arguments if a != "--quick"], quick="--quick" in arguments))
