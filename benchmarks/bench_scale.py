"""`infer run --devices` speed, by hand: ``python benchmarks/bench_scale.py [--batches N] [--repeat N]``.

Builds a medium CNN (TF1 raw ops), freezes it, converts it to the ONNX stand-in, writes N batches of bins
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
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np

from binio.binfile import sha256_file, write_bin
from binio.manifest import BinEntry, DatasetManifest, InputManifest, bin_file_name
from binio.spec import TensorSpec
from infer.contract import ModelContract, SourceInfo
from infer.run import RunOptions, RunResult, run_model
from infer.scale import ScaleOptions, run_sharded

Row = tuple[str, float, str]
BATCH, SIDE, CHANNELS = 8, 64, 3


def build_model(folder: Path) -> ModelContract:
    """conv(32) -> relu -> pool -> conv(64) -> relu -> pool -> conv(64) -> relu -> mean -> dense(10) -> softmax."""
    import tensorflow as tf

    from infer.convert import ConvertOptions, convert_model

    tf1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        tf1.set_random_seed(0)
        images = tf1.placeholder(tf.float32, [BATCH, SIDE, SIDE, CHANNELS], name="images")
        hidden = images
        for index, width in enumerate((32, 64, 64)):
            kernel = tf1.get_variable(f"conv{index}/kernel", [3, 3, hidden.shape[-1], width],
                                      initializer=tf1.glorot_uniform_initializer())
            hidden = tf.nn.relu(tf.nn.conv2d(hidden, kernel, 1, "SAME"))
            if index < 2:
                hidden = tf.nn.max_pool2d(hidden, 2, 2, "VALID")
        pooled = tf.reduce_mean(hidden, axis=[1, 2])
        weights = tf1.get_variable("head/weights", [64, 10], initializer=tf1.glorot_uniform_initializer())
        tf.nn.softmax(tf.matmul(pooled, weights), name="probs")
        with tf1.Session(graph=graph) as session:
            session.run(tf1.global_variables_initializer())
            frozen = tf1.graph_util.convert_variables_to_constants(session, graph.as_graph_def(), ["probs"])
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "model.pb").write_bytes(frozen.SerializeToString())
    contract = ModelContract(
        path=folder / "model.json", pb="model.pb", pb_sha256=sha256_file(folder / "model.pb"),
        source=SourceInfo(path="benchmark", kind="pb", tf_version="", frozen_with_tf=tf.__version__),
        inputs=(TensorSpec("images:0", "float32", (BATCH, SIDE, SIDE, CHANNELS), "NHWC"),),
        outputs=(TensorSpec("probs:0", "float32", (BATCH, 10)),),
    ).save()
    return convert_model(contract, ConvertOptions(target="onnx", precision_mode="force_fp32")).contract


def write_bins(root: Path, batches: int) -> DatasetManifest:
    rng = np.random.default_rng(0)
    entries = []
    for index in range(batches):
        array = rng.standard_normal((BATCH, SIDE, SIDE, CHANNELS)).astype(np.float32)
        entries.append(BinEntry(bin_file_name(index), write_bin(root / "images" / bin_file_name(index), array),
                                BATCH))
    item = InputManifest(tensor="images:0", folder="images", dtype="float32", shape=(BATCH, SIDE, SIDE, CHANNELS),
                         layout="NHWC", files=tuple(entries))
    return DatasetManifest(root=root, batch=BATCH, samples=BATCH * batches, inputs=(item,)).save()


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
