"""`infer compare` memory and speed: ``python benchmarks/bench_compare.py [--mib-per-side 512] [--quick]``.

Writes a dataset and two run folders of one float32 output, (256, 1024) per batch file (1 MiB), 512 MiB a side by
default (1 GiB of outputs; ``--quick``: 64 MiB), the last batch padded; then measures, each in its own child
process so that peak memory is its own:
- streaming: `infer.compare.compare.compare_run_folders` (memory-mapped batches, per-batch metrics, per-sample
  scores, plot data, the two-pass KL), peak RSS (target < 300 MiB) and time;
- baseline: plain all-in-memory numpy, both sides read whole with np.fromfile and the same metric definitions
  (`infer.compare.metrics.compute_metrics`) run over them; peak RSS and time.
It prints both, their ratio, and the largest relative difference between the two sets of numbers; `main()` returns
the time and peak-memory ratios for benchmarks/run_all.py.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from binio.binfile import write_bin
from binio.manifest import BinEntry, DatasetManifest, InputManifest, bin_file_name, load_manifest
from binio.spec import TensorSpec
from infer.contract import ModelContract, SourceInfo, load_contract
from infer.layout import output_file_name

BATCH, WIDTH = 256, 1024  # one batch file of the output: 1 MiB of float32
PADDING = 100
Row = tuple[str, float, str]
METRICS = ("CosineSimilarity", "MaxAbsoluteError", "MeanAbsoluteError", "RootMeanSquareError",
           "RelativeEuclideanDistance", "AccumulatedRelativeError", "MaxRelativeError", "MeanRelativeError",
           "KullbackLeiblerDivergence", "AllclosePassRate")


def write_case(root: Path, files: int) -> None:
    rng = np.random.default_rng(0)
    entries = []
    for index in range(files):
        stem = bin_file_name(index)[:-4]
        rows = BATCH - PADDING if index == files - 1 else BATCH
        entries.append(BinEntry(name=bin_file_name(index), sha256="", rows=rows))
        write_bin(root / "bins" / "x" / bin_file_name(index), np.zeros((BATCH, 1), dtype=np.float32))
        golden = rng.normal(size=(BATCH, WIDTH)).astype(np.float32)
        actual = golden + rng.normal(scale=1e-3, size=golden.shape).astype(np.float32)
        write_bin(root / "golden" / output_file_name(stem, 0), golden)
        write_bin(root / "actual" / output_file_name(stem, 0), actual)
    item = InputManifest(tensor="x:0", folder="x", dtype="float32", shape=(BATCH, 1), layout="ND",
                         files=tuple(entries))
    DatasetManifest(root=root / "bins", batch=BATCH, samples=files * BATCH - PADDING, inputs=(item,)).save()
    ModelContract(path=root / "model.json", pb="model.pb", pb_sha256="",
                  source=SourceInfo(path="", kind="pb", tf_version="", frozen_with_tf=""),
                  inputs=(TensorSpec("x:0", "float32", (None, 1)),),
                  outputs=(TensorSpec("emb:0", "float32", (None, WIDTH)),)).save()


def child_streaming(root: Path) -> dict[str, object]:
    from infer.compare.compare import CompareOptions, compare_run_folders

    start = time.perf_counter()
    result = compare_run_folders(load_contract(root / "model.json"), load_manifest(root / "bins"), root / "actual",
                                 root / "golden", CompareOptions())
    seconds = time.perf_counter() - start
    metrics = result.outputs[0].metrics
    return {"seconds": seconds, "values": {name: metrics.value(name) for name in METRICS}}


def child_baseline(root: Path) -> dict[str, object]:
    from infer.compare.metrics import compute_metrics

    manifest = load_manifest(root / "bins")
    start = time.perf_counter()
    sides = []
    for side in ("actual", "golden"):
        parts = [np.fromfile(root / side / output_file_name(stem, 0), dtype=np.float32).reshape(BATCH, WIDTH)[:rows]
                 for stem, rows in zip(manifest.stems, (f.rows for f in manifest.inputs[0].files), strict=True)]
        sides.append(np.concatenate(parts))
        del parts
    metrics = compute_metrics(sides[0], sides[1], atol=1e-4, rtol=1e-3)
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "values": {name: metrics.value(name) for name in METRICS}}


def run_child(kind: str, root: Path) -> dict[str, Any]:
    output = subprocess.run([sys.executable, __file__, "--child", kind, str(root)], check=True,
                            capture_output=True, text=True).stdout
    return dict(json.loads(output.strip().splitlines()[-1]))


def measure(mib_per_side: int, *, baseline: bool = True, keep: Path | None = None) -> list[Row]:
    """Writes the case, runs each side in its own process, prints what it found; rows for run_all.py."""
    root = keep or Path(tempfile.mkdtemp(prefix="bench_compare_"))
    try:
        start = time.perf_counter()
        write_case(root, mib_per_side)
        print(f"wrote {mib_per_side} MiB of outputs a side ({mib_per_side} batch files of {BATCH}x{WIDTH} "
              f"float32) in {time.perf_counter() - start:.1f} s")
        streaming = run_child("streaming", root)
        if not baseline:
            print(f"streaming (infer compare)    {streaming['seconds']:8.2f} s   peak RSS "
                  f"{streaming['peak_rss_mib']:8.1f} MiB")
            return []
        in_memory = run_child("baseline", root)
        for name, found in (("streaming (infer compare)", streaming), ("all-in-memory numpy", in_memory)):
            print(f"{name:28s} {found['seconds']:8.2f} s   peak RSS {found['peak_rss_mib']:8.1f} MiB")
        time_ratio = float(streaming["seconds"]) / float(in_memory["seconds"])
        memory_ratio = float(streaming["peak_rss_mib"]) / float(in_memory["peak_rss_mib"])
        print(f"time streaming / in-memory: {time_ratio:.2f}x; memory in-memory / streaming: {1 / memory_ratio:.1f}x")
        differences = {name: abs(streaming["values"][name] - in_memory["values"][name])
                       / max(abs(in_memory["values"][name]), 1e-300) for name in METRICS}
        worst = max(differences, key=lambda k: differences[k])
        print(f"largest relative difference between the two: {differences[worst]:.2e} ({worst})")
        size = f"{2 * mib_per_side} MiB of outputs"
        return [(f"compare {size}: time", time_ratio,
                 f"vs all-in-memory numpy, lower is better ({streaming['seconds']:.0f} s vs "
                 f"{in_memory['seconds']:.0f} s; numbers equal to {differences[worst]:.0e} relative)"),
                (f"compare {size}: peak RSS", memory_ratio,
                 f"vs all-in-memory numpy, lower is better ({streaming['peak_rss_mib']:.0f} MiB vs "
                 f"{in_memory['peak_rss_mib']:.0f} MiB; target < 300 MiB)")]
    finally:
        if keep is None:
            shutil.rmtree(root, ignore_errors=True)


def main(quick: bool = False) -> list[Row]:
    return measure(64 if quick else 512)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib-per-side", type=int, help="default 512 (1 GiB of outputs); 64 with --quick")
    parser.add_argument("--quick", action="store_true", help="64 MiB a side")
    parser.add_argument("--child", nargs=2, metavar=("KIND", "ROOT"), help=argparse.SUPPRESS)
    parser.add_argument("--keep", type=Path, help="write the case here and keep it")
    parser.add_argument("--no-baseline", action="store_true",
                        help="streaming only: the in-memory baseline needs about 15x one side's size in RAM")
    args = parser.parse_args()
    if args.child:
        kind, folder = args.child
        found = (child_streaming if kind == "streaming" else child_baseline)(Path(folder))
        found["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(json.dumps(found))
    else:
        measure(args.mib_per_side or (64 if args.quick else 512), baseline=not args.no_baseline, keep=args.keep)
