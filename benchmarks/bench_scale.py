"""`infer run --devices` speed, by hand: ``python benchmarks/bench_scale.py [--batches N] [--repeat N]``.

Builds bench_run.py's medium CNN (TF1 raw ops), frozen and converted to the ONNX stand-in, writes N batches of bins
(320 by default, 126 MB: enough that worker starts do not dominate), then measures in this one run, best of
--repeat, interleaved:
- one worker: a plain `infer run` (ONNX Runtime with its default threads, every core);
- two workers: `infer run --devices 0,1` (two spawned worker processes, the cores shared between them).
Rows: the end-to-end throughput of two workers against one (worker starts, model loads and file moves included),
and the summed compute throughput of the two workers against the one's. Both runs' outputs are compared byte for
byte. On a machine with few cores the ratio says how much the split costs; with more cores than one ONNX Runtime
session uses well, what it gains.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench_run, beside this file, builds the model and bins

from bench_run import BATCH, CHANNELS, SIDE, build_model, write_bins

from infer.run import RunResult, run_model
from infer.run._sharded import run_sharded
from infer.run.options import RunOptions, ScaleOptions

Row = tuple[str, float, str]


def _timed(run: object) -> tuple[float, RunResult]:
    start = time.perf_counter()
    result = run() if callable(run) else None
    assert isinstance(result, RunResult)
    return time.perf_counter() - start, result


def measure(batches: int, repeat: int) -> list[Row]:
    work = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    try:
        contract = build_model(work / "model")
        bins = write_bins(work / "bins", batches)
        samples = BATCH * batches
        one: list[tuple[float, float]] = []  # (wall s, compute samples/s)
        two: list[tuple[float, float]] = []
        folders: dict[str, Path] = {}
        for attempt in range(repeat):
            wall, result = _timed(lambda a=attempt: run_model(contract.path, bins.root, work / f"one-{a}"))
            one.append((wall, result.record.throughput or 0.0))
            folders["one"] = result.folder
            wall, result = _timed(lambda a=attempt: run_sharded(contract.path, bins.root, work / f"two-{a}",
                                                                RunOptions(), ScaleOptions(devices=(0, 1))))
            two.append((wall, result.record.throughput or 0.0))
            folders["two"] = result.folder
        names = sorted(p.name for p in folders["one"].iterdir() if p.name.endswith(".bin"))
        _, mismatch, errors = filecmp.cmpfiles(folders["one"], folders["two"], names, shallow=False)
        identical = not mismatch and not errors
        one_wall, two_wall = min(w for w, _ in one), min(w for w, _ in two)
        one_rate, two_rate = max(r for _, r in one), max(r for _, r in two)
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        print(f"model: CNN {BATCH}x{SIDE}x{SIDE}x{CHANNELS}, {batches} batches, {cores} cores, best of {repeat}")
        print(f"1 worker,  end to end         {samples / one_wall:9.1f} samples/s   ({one_wall:.2f} s)")
        print(f"2 workers, end to end         {samples / two_wall:9.1f} samples/s   ({two_wall:.2f} s)   "
              f"{one_wall / two_wall:.3f}x")
        print(f"1 worker,  compute            {one_rate:9.1f} samples/s")
        print(f"2 workers, compute (summed)   {two_rate:9.1f} samples/s   {two_rate / one_rate:.3f}x")
        print(f"outputs byte-identical: {identical}")
        if not identical:
            raise AssertionError(f"2 workers wrote different outputs: {mismatch or errors}")
        return [("2 workers vs 1, end to end", one_wall / two_wall,
                 f"throughput of run --devices 0,1 vs a plain run ({cores} cores; starts included)"),
                ("2 workers vs 1, compute", two_rate / one_rate,
                 "summed per-worker inference throughput vs one worker's")]
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(quick: bool = False) -> list[Row]:
    return measure(batches=16 if quick else 320, repeat=1 if quick else 2)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, help="default 320; 16 with --quick")
    parser.add_argument("--repeat", type=int, help="default 2; 1 with --quick")
    parser.add_argument("--quick", action="store_true", help="fewer batches, one round")
    args = parser.parse_args()
    measure(batches=args.batches or (16 if args.quick else 320), repeat=args.repeat or (1 if args.quick else 2))
