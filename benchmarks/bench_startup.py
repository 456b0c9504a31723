"""How long `infer` takes to answer before it does anything: ``python benchmarks/bench_startup.py [--quick]``.

Whole processes, alternated (`endtoend.alternate`): `infer --help` and `infer <command> --help` for the commands
people run most, beside `python -c pass` (the interpreter's own start). Target: <= 0.2 s each. Rows give seconds
(the median), not a ratio.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from endtoend import Row, Side, alternate, infer_command

COMMANDS = ((), ("dump-bin",), ("run",), ("compare",), ("freeze",))


def main(quick: bool = False) -> list[Row]:
    sides = [Side("python -c pass", [sys.executable, "-c", "pass"])]
    sides += [Side(" ".join(("infer", *command, "--help")), infer_command(*command, "--help")) for command in COMMANDS]
    print("start-up: --help, whole processes")
    result = alternate(sides, 3 if quick else 15)
    return [(side.name, result.runs[side.name].median,
             f"seconds, median of {len(result.runs[side.name].seconds)} ({min(result.runs[side.name].seconds):.2f}-"
             f"{max(result.runs[side.name].seconds):.2f}), {result.load()}; target <= 0.2 s"
             + ("" if side.name.startswith("infer") else " (the interpreter alone, for scale)"))
            for side in sides]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="three rounds")
    main(quick=parser.parse_args().quick)
