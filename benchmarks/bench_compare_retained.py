"""What compare keeps per batch, by hand (a minute): tracemalloc over one `compare()` of N batches of batch 1.

    python benchmarks/bench_compare_retained.py [--batches 1000 10000] [--folder DIR]

A classifier output (batch, 10) float32 and a feature map (batch, 4, 4) float32, written by hand in msame's layout
for both sides (no model runs: the golden is given, as when it is cached); each side's values drawn on their own, so
every batch and sample fails its limits (the most a report holds: every failing sample listed). For each count: the
peak of traced memory during `compare()`, and what the result still holds once it returns (traced memory with the
result alive, after a collection, minus before); per batch: the growth from the smallest count to each larger one
over the batches added. report.json's sha256 (the temporary folder's name and the dates left out) is printed, so
that two commits can be checked to write the same bytes. Nothing is asserted (tests/infer/compare/test_retained.py
holds the bound structurally).
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import re
import shutil
import sys
import tempfile
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from binio.binfile import write_bin
from binio.manifest import BinEntry, DatasetManifest, InputManifest, bin_file_name
from binio.spec import TensorSpec
from infer.compare import CompareOptions
from infer.compare._compare import compare
from infer.compare._reports.report_json import write_report_json
from infer.contract import ConvertedInfo, ModelContract, SourceInfo
from infer.run.layout import output_file_name

SHAPES = ((10,), (4, 4))


def write_case(root: Path, batches: int) -> tuple[Path, Path, Path, Path]:
    rng = np.random.default_rng(0)
    outputs = tuple(TensorSpec(f"out{i}:0", "float32", (None, *shape)) for i, shape in enumerate(SHAPES))
    inputs = (TensorSpec("x:0", "float32", (None, 3)),)
    converted = ConvertedInfo(target="onnx", path="model.onnx", sha256="1" * 64, inputs=inputs, outputs=outputs,
                              precision_mode="force_fp16")
    (root / "model").mkdir(parents=True)
    contract = ModelContract(path=root / "model" / "model.json", pb="model.pb", pb_sha256="0" * 64,
                             source=SourceInfo(path="", kind="pb", tf_version="", frozen_with_tf=""),
                             inputs=inputs, outputs=outputs, converted=converted).save()
    files = []
    for index in range(batches):
        name = bin_file_name(index)
        files.append(BinEntry(name=name, digest=write_bin(root / "bins" / "x" / name,
                                                          rng.random((1, 3), dtype=np.float32)), rows=1))
        for side, noise in (("golden", 0.0), ("actual", 1e-3)):
            for o, shape in enumerate(SHAPES):
                values = rng.random((1, *shape), dtype=np.float32)
                write_bin(root / side / "20240101_120000" / output_file_name(name[:-4], o),
                          values + np.float32(noise) * values)
    item = InputManifest(tensor="x:0", folder="x", dtype="float32", shape=(1, 3), layout="ND", files=tuple(files))
    DatasetManifest(root=root / "bins", batch=1, samples=batches, inputs=(item,)).save()
    return contract.path, root / "bins", root / "actual", root / "golden"


def measure(root: Path, batches: int) -> tuple[int, int, str]:
    model, bins, actual, golden = write_case(root, batches)
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    result = compare(model, bins, actual, golden=golden, options=CompareOptions())
    gc.collect()
    current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    report = write_report_json(result, root)
    # The temporary folder's name and the dates the sides' records hold aside: the rest is the same at every run.
    text = re.sub(r'"date": "[^"]*"', '"date": ""', report.read_text().replace(str(root), "ROOT"))
    return peak - before, current - before, hashlib.sha256(text.encode()).hexdigest()


Row = tuple[str, float, str]


def measure_counts(counts: tuple[int, ...], folder: Path | None = None) -> list[Row]:
    """The table printed, and one row per larger count: the held bytes a batch added (the figure), the peak's in the
    note."""
    measured = []
    for count in counts:
        root = Path(tempfile.mkdtemp(prefix=f"retained{count}_", dir=folder))
        try:
            measured.append((count, *measure(root, count)))
        finally:
            shutil.rmtree(root, ignore_errors=True)
    print(f"{'batches':>8} {'peak MiB':>9} {'kept MiB':>9} {'peak B/batch':>13} {'kept B/batch':>13}  report.json")
    first = measured[0]
    rows: list[Row] = []
    for count, peak, kept, digest in measured:
        added = count - first[0]
        per_peak = (peak - first[1]) / added if added else 0.0
        per_kept = (kept - first[2]) / added if added else 0.0
        print(f"{count:>8} {peak / 2**20:>9.2f} {kept / 2**20:>9.2f} {per_peak:>13.0f} {per_kept:>13.0f}  "
              f"{digest[:16]}")
        if added:
            rows.append((f"compare held per batch, {first[0]} -> {count} batches of 1", per_kept,
                         f"bytes a batch held by the result; the peak grows {per_peak:.0f} bytes a batch"))
    return rows


def main(quick: bool = False) -> list[Row]:
    return measure_counts((100, 400) if quick else (1000, 10000))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, nargs="+", default=[1000, 10000], help="batch counts")
    parser.add_argument("--folder", type=Path, default=None, help="where the cases go (default: a temporary one)")
    parser.add_argument("--quick", action="store_true", help="100 and 400 batches: a check that it runs")
    args = parser.parse_args()
    measure_counts((100, 400) if args.quick else tuple(args.batches), args.folder)
