"""`infer compare` against plain all-in-memory numpy, whole processes: ``python benchmarks/bench_compare.py
[--mib-per-side 1024] [--quick]``.

Writes a dataset and two run folders of one float32 output, (256, 1024) per batch file (1 MiB), 1 GiB a side by
default (``--quick``: 32 MiB), the last batch padded; then alternates (`endtoend.alternate`)
- `infer compare MODEL -i BINS -a ACTUAL -g GOLDEN -r REPORT` (memory-mapped batches, per-batch metrics,
  per-sample scores, top-k, plot data, the two-pass KL, report.json/csv/html), and
- `hand/compare_numpy.py`: both sides read whole with np.fromfile, the ten metrics over the whole tensors;
timing each whole process and taking its peak RSS. Targets: time <= 0.9x the numpy script's, peak <= 300 MiB. The
numbers of the two must agree (largest relative difference printed; the sums are added in another order).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from endtoend import Row, Side, alternate, hand_command, infer_command, median_note

from binio.binfile import write_bin
from binio.manifest import BinEntry, DatasetManifest, InputManifest, bin_file_name
from binio.spec import TensorSpec
from infer.contract import ModelContract, SourceInfo
from infer.run.layout import output_file_name

BATCH, WIDTH = 256, 1024  # one batch file of the output: 1 MiB of float32
PADDING = 100
METRICS = ("CosineSimilarity", "MaxAbsoluteError", "MeanAbsoluteError", "RootMeanSquareError",
           "RelativeEuclideanDistance", "AccumulatedRelativeError", "MaxRelativeError", "MeanRelativeError",
           "KullbackLeiblerDivergence", "AllclosePassRate")


def write_case(root: Path, files: int) -> None:
    rng = np.random.default_rng(0)
    entries = []
    for index in range(files):
        stem = bin_file_name(index)[:-4]
        rows = BATCH - PADDING if index == files - 1 else BATCH
        bins = root / "bins" / "x" / bin_file_name(index)
        # compare checks the inputs' digests against dataset.json's (the bins must be those the outputs came from)
        digest = write_bin(bins, np.zeros((BATCH, 1), dtype=np.float32))
        entries.append(BinEntry(name=bin_file_name(index), digest=digest, rows=rows))
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


def agreement(report: Path, hand: Path) -> str:
    ours = json.loads((report / "report.json").read_text())["outputs"][0]["metrics"]
    theirs = json.loads(hand.read_text())
    differences = {name: abs(ours[name] - theirs[name]) / max(abs(theirs[name]), 1e-300) for name in METRICS}
    worst = max(differences, key=lambda k: differences[k])
    if differences[worst] > 1e-6:
        raise AssertionError(f"{worst}: infer compare says {ours[worst]}, numpy {theirs[worst]}")
    return f"the ten metrics agree to {differences[worst]:.0e} relative (worst {worst})"


def measure(mib_per_side: int, rounds: int, keep: Path | None = None) -> list[Row]:
    """Writes the case, alternates the two whole processes, prints what it found; rows for run_all.py."""
    root = keep or Path(tempfile.mkdtemp(prefix="bench_compare_"))
    try:
        start = time.perf_counter()
        write_case(root, mib_per_side)
        print(f"compare: wrote {mib_per_side} MiB of outputs a side ({mib_per_side} batch files of {BATCH}x{WIDTH} "
              f"float32) in {time.perf_counter() - start:.1f} s")
        samples = mib_per_side * BATCH - PADDING
        report, hand = root / "report", root / "hand.json"
        ours_side = Side("infer compare", infer_command("compare", root / "model.json", "-i", root / "bins", "-a",
                                                        root / "actual", "-g", root / "golden", "-r", report,
                                                        "--allow-same-backend"), report)
        hand_side = Side("hand/compare_numpy.py", hand_command("compare_numpy.py", root / "actual", root / "golden",
                                                               samples, WIDTH, hand), hand)
        result = alternate([ours_side, hand_side], rounds, check=lambda: agreement(report, hand))
        size = f"{mib_per_side} MiB a side"
        ours, theirs = result.runs["infer compare"], result.runs["hand/compare_numpy.py"]
        return [(f"{size}: time", result.ratio("infer compare", "hand/compare_numpy.py"),
                 median_note(result, "infer compare", "hand/compare_numpy.py", "<= 0.9x, lower is better")),
                (f"{size}: peak RSS", ours.median_peak_mib / theirs.median_peak_mib,
                 f"infer compare {ours.median_peak_mib:.0f} MiB vs numpy {theirs.median_peak_mib:.0f} MiB; "
                 "target <= 300 MiB")]
    finally:
        if keep is None:
            shutil.rmtree(root, ignore_errors=True)


def main(quick: bool = False) -> list[Row]:
    return measure(32 if quick else 1024, rounds=1 if quick else 3)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib-per-side", type=int, help="default 1024 (1 GiB a side); 32 with --quick")
    parser.add_argument("--rounds", type=int, help="default 3; 1 with --quick")
    parser.add_argument("--quick", action="store_true", help="32 MiB a side, one round")
    parser.add_argument("--keep", type=Path, help="write the case here and keep it")
    args = parser.parse_args()
    measure(args.mib_per_side or (32 if args.quick else 1024), rounds=args.rounds or (1 if args.quick else 3),
            keep=args.keep)
