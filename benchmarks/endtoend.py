"""Whole processes against whole processes: what every `bench_*.py` measures with.

A case is two command lines, `infer ...` and a hand-written script in `benchmarks/hand/` doing the same job the way
a user would write it, each with the folder or file it writes. `alternate` runs them in turns (the lead changing
every round, each side's output deleted and the disk synced before its run, so both write to the disk in the same
state), times each whole process (start-up, imports and exit included), takes its CPU time (user + system, every
thread) and its peak resident memory from the kernel (`wait4`'s ru_utime + ru_stime and ru_maxrss), then checks
once that the two outputs are equal. Medians with min-max, and the load average before and after: the machine may
be shared, and a figure means little without it (CPU time moves less than wall time when other work competes for
the cores).
Nothing here asserts a time.
"""

from __future__ import annotations

import functools
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ckpt2pb.logs import quiet_tensorflow_environment

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
HAND = HERE / "hand"
Row = tuple[str, float, str]


def infer_command(*arguments: object) -> list[str]:
    """`infer ...` as a user runs it (the console script's entry point), from this checkout."""
    return [sys.executable, "-c", "from infer.cli.app import main; main()", *map(str, arguments)]


def hand_command(script: str, *arguments: object) -> list[str]:
    return [sys.executable, str(HAND / script), *map(str, arguments)]


@functools.cache
def _compiled() -> None:
    """Byte-compiles the checkout once, as pip does when it installs a package: a run that finds no .pyc compiles
    every module it imports (infer's hundred and more: about 0.2 s of each command's start-up)."""
    import compileall

    for package in ("binio", "ckpt2pb", "atc_wrap", "infer"):
        compileall.compile_dir(ROOT / package, quiet=1)


def environment() -> dict[str, str]:
    _compiled()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH", "")])])
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # read the .pyc files, as an installed package's are
    quiet_tensorflow_environment(env)  # the same level for infer and for the hand-written side
    return env


@dataclass(frozen=True)
class Side:
    """One contestant: its command line and what it writes (removed before each of its runs)."""

    name: str
    argv: list[str]
    output: Path | None = None


@dataclass
class Runs:
    seconds: list[float] = field(default_factory=list)
    peak_mib: list[float] = field(default_factory=list)
    cpu_seconds: list[float] = field(default_factory=list)  # user + system, all threads

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    @property
    def median_cpu(self) -> float:
        return statistics.median(self.cpu_seconds)

    @property
    def median_peak_mib(self) -> float:
        return statistics.median(self.peak_mib)

    def describe(self) -> str:
        return (f"{self.median:.2f} s ({min(self.seconds):.2f}-{max(self.seconds):.2f}), "
                f"CPU {self.median_cpu:.2f} s ({min(self.cpu_seconds):.2f}-{max(self.cpu_seconds):.2f}), "
                f"peak {self.median_peak_mib:.0f} MiB")


def _remove(path: Path | None) -> None:
    if path is None:
        return
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


# Starts the command from a small process and reports its time and peak RSS. Not from this one: Linux carries the
# high-water mark of the address space a child was forked from into its ru_maxrss, and a benchmark that has built
# a model with TensorFlow would lend every command it starts a peak of a GiB.
_LAUNCHER = """
import os, subprocess, sys, time
started = time.perf_counter()
process = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(process.pid, 0)
seconds = time.perf_counter() - started
with open(sys.argv[1], "w") as report:
    report.write(f"{os.waitstatus_to_exitcode(status)} {seconds} {usage.ru_maxrss} {usage.ru_utime + usage.ru_stime}")
"""


def run_once(side: Side, env: dict[str, str] | None = None) -> tuple[float, float, float]:
    """(wall seconds, peak RSS MiB, CPU seconds) of one whole process; its output on failure.

    Every side starts with nothing waiting to be written: the previous run's hundreds of MB of dirty pages (and,
    on a file system mounted with discard, the trimming of a deleted output's blocks) are otherwise flushed while
    the next side runs, whichever it is, and on this machine that turned a 0.4 s dump into a 2 s one at random,
    on both sides (system time 0.2 s -> 1.8 s)."""
    _remove(side.output)
    os.sync()
    with tempfile.NamedTemporaryFile(prefix="bench-", suffix=".txt") as report:
        done = subprocess.run([sys.executable, "-c", _LAUNCHER, report.name, *side.argv], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, env=env or environment(), cwd=ROOT, check=False)
        code, seconds, peak_kb, cpu = Path(report.name).read_text().split()
    if done.returncode != 0 or int(code) != 0:
        raise RuntimeError(f"{side.name} exited {code}: {' '.join(side.argv)}\n"
                           f"{done.stdout.decode(errors='replace')[-3000:]}")
    return float(seconds), int(peak_kb) / 1024, float(cpu)


def load_average() -> float:
    return os.getloadavg()[0]


@dataclass
class Result:
    runs: dict[str, Runs]
    load_before: float
    load_after: float
    equal: str

    def ratio(self, ours: str, theirs: str) -> float:
        return self.runs[ours].median / self.runs[theirs].median

    def cpu_ratio(self, ours: str, theirs: str) -> float:
        return self.runs[ours].median_cpu / self.runs[theirs].median_cpu

    def load(self) -> str:
        return f"load {self.load_before:.1f}->{self.load_after:.1f}"


def alternate(sides: Sequence[Side], rounds: int, check: Callable[[], str] | None = None,
              env: dict[str, str] | None = None) -> Result:
    """Every side `rounds` times, in turns, the lead rotating; `check()` (after the first round, with every
    side's output in place) says how the outputs compare, and raises if they differ."""
    runs = {side.name: Runs() for side in sides}
    before = load_average()
    equal = "not compared"
    for attempt in range(rounds):
        shift = attempt % len(sides)
        for side in [*sides[shift:], *sides[:shift]]:
            seconds, peak, cpu = run_once(side, env)
            runs[side.name].seconds.append(seconds)
            runs[side.name].peak_mib.append(peak)
            runs[side.name].cpu_seconds.append(cpu)
        if attempt == 0 and check is not None:
            equal = check()
    for side in sides:
        _remove(side.output)
    result = Result(runs=runs, load_before=before, load_after=load_average(), equal=equal)
    for side in sides:
        print(f"  {side.name:<28} {runs[side.name].describe()}")
    print(f"  {result.load()}; outputs: {equal}")
    return result


def same_files(ours: Path, theirs: Path, pattern: str = "*.bin") -> str:
    """Every `pattern` file under `theirs` has a byte-equal twin of the same name under `ours`."""
    found = sorted(theirs.glob(pattern))
    if not found:
        raise AssertionError(f"{theirs}: no {pattern} written")
    for path in found:
        twin = ours / path.name
        if not twin.is_file() or twin.read_bytes() != path.read_bytes():
            raise AssertionError(f"{twin} differs from {path}")
    return f"{len(found)} files equal byte for byte"


def median_note(result: Result, ours: str, theirs: str, target: str) -> str:
    return (f"{ours} {result.runs[ours].describe()} vs {theirs} {result.runs[theirs].describe()}; "
            f"{len(result.runs[ours].seconds)} rounds, {result.load()}; {result.equal}; target {target}")
