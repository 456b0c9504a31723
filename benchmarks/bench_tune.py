"""`infer tune-precision` cost, by hand: ``python benchmarks/bench_tune.py [--quick]``.

Builds a ResNet-50-sized network in TF1 raw ops (a stem conv, bottleneck stages of 3, 4, 6 and 3 blocks with
projection shortcuts: 53 convolutions, 127 ops the keep_dtype file can name; narrow channels and 16x16 inputs
so that one candidate takes about a second on a CPU), frozen with random weights. Deep inside it (after the third
stage) sits an L2 normalisation of activations scaled by 300: reduce_sum(square(h)) passes 65504, so the network
fails compare under force_fp16. Then, on the same model and bins, it runs:
- tune-precision as shipped (layerwise seeds, bisection, shrink);
- bisection without seeds (Polygraphy's bisect mode plus the shrink);
- a linear search without seeds (Polygraphy's linear mode: one more op at a time in graph order, plus the shrink).
Rows: candidates tried and wall time of the first two against the linear search (lower is better), each a real
stand-in conversion, run and compare. All three must find the same set.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from binio.binfile import sha256_file, write_bin
from binio.manifest import BinEntry, DatasetManifest, InputManifest, bin_file_name, load_manifest
from binio.spec import TensorSpec
from ckpt2pb.logs import quiet_tensorflow_logs
from infer.contract import ModelContract, SourceInfo
from infer.tune._tune import TuneOptions, TuneResult, tune_precision

BATCH, SIDE = 2, 16
Row = tuple[str, float, str]

quiet_tensorflow_logs()  # before the models are built


def build_resnet(folder: Path, stages: tuple[int, ...]) -> ModelContract:
    """Bottleneck ResNet (conv-bias-relu units, random weights), an fp16-overflowing L2 normalisation after the
    third stage, global mean, dense, softmax."""
    import tensorflow as tf

    tf.get_logger().setLevel("ERROR")
    rng = np.random.default_rng(0)
    graph = tf.Graph()
    counter = [0]

    def unit(x: Any, out: int, size: int = 1, relu: bool = True) -> Any:  # TensorFlow tensors: untyped
        counter[0] += 1
        channels = x.shape[-1]
        kernel = (rng.normal(size=(size, size, channels, out)) * np.sqrt(2 / (size * size * channels)))
        y = tf.nn.conv2d(x, tf.constant(kernel.astype(np.float32)), 1, "SAME", name=f"conv{counter[0]}")
        y = tf.nn.bias_add(y, tf.constant((rng.normal(size=out) * 0.01).astype(np.float32)))
        return tf.nn.relu(y) if relu else y

    with graph.as_default():
        images = tf.compat.v1.placeholder(tf.float32, [BATCH, SIDE, SIDE, 3], name="images")
        hidden = unit(images, 16, 3)
        width = 16
        for stage, blocks in enumerate(stages):
            for block in range(blocks):
                shortcut = unit(hidden, width * 4, relu=False) if block == 0 else hidden
                y = unit(hidden, width)
                y = unit(y, width, 3)
                y = unit(y, width * 4, relu=False)
                hidden = tf.nn.relu(y + shortcut)
            if stage == 2:  # the fp16 trap: an L2 normalisation of activations scaled up
                scaled = tf.multiply(hidden, 300.0, name="scaled")
                energy = tf.reduce_sum(tf.square(scaled, name="squared"), axis=-1, keepdims=True, name="energy")
                hidden = tf.divide(scaled, tf.sqrt(energy, name="norm") + 1.0, name="normalised")
            width = min(width * 2, 32)
        pooled = tf.reduce_mean(hidden, axis=[1, 2])
        weights = tf.constant((rng.normal(size=(pooled.shape[-1], 10)) * 0.3).astype(np.float32))
        tf.nn.softmax(tf.matmul(pooled, weights), name="probs")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "model.pb").write_bytes(graph.as_graph_def().SerializeToString())
    return ModelContract(
        path=folder / "model.json", pb="model.pb", pb_sha256=sha256_file(folder / "model.pb"),
        source=SourceInfo(path="benchmark", kind="pb", tf_version="", frozen_with_tf=tf.__version__),
        inputs=(TensorSpec("images:0", "float32", (BATCH, SIDE, SIDE, 3), "NHWC"),),
        outputs=(TensorSpec("probs:0", "float32", (BATCH, 10)),),
    ).save()


def write_bins(root: Path, batches: int) -> DatasetManifest:
    rng = np.random.default_rng(1)
    entries = []
    for index in range(batches):
        array = rng.standard_normal((BATCH, SIDE, SIDE, 3)).astype(np.float32)
        entries.append(BinEntry(bin_file_name(index), write_bin(root / "images" / bin_file_name(index), array),
                                BATCH))
    item = InputManifest(tensor="images:0", folder="images", dtype="float32", shape=(BATCH, SIDE, SIDE, 3),
                         layout="NHWC", files=tuple(entries))
    return DatasetManifest(root=root, batch=BATCH, samples=BATCH * batches, inputs=(item,)).save()


def _tune(contract: ModelContract, bins: Path, out: Path, **options: object) -> tuple[TuneResult, float]:
    start = time.perf_counter()
    result = tune_precision(contract.path, bins, out, TuneOptions(**options))  # type: ignore[arg-type]
    return result, time.perf_counter() - start


def _warm_up(contract: ModelContract, bins: Path, folder: Path) -> None:
    """One conversion, run and golden run, so that TensorFlow's, tf2onnx's and ONNX Runtime's start-up costs are
    paid before any search is timed."""
    from infer.compare._sides.golden import tensorflow_golden
    from infer.convert._convert import ConvertOptions, convert_model
    from infer.run import run_model
    from infer.run.options import RunOptions
    from infer.tune._trial import stage_contract

    staged = convert_model(stage_contract(contract, folder), ConvertOptions(target="onnx")).contract
    run_model(staged.path, bins, folder / "runs", RunOptions(backend="onnxrt"))
    tensorflow_golden(contract, load_manifest(bins), cache_root=folder / "cache")


def main(quick: bool = False) -> list[Row]:
    work = Path(tempfile.mkdtemp(prefix="bench-tune-"))
    try:
        contract = build_resnet(work / "model", (1, 1, 2, 1) if quick else (3, 4, 6, 3))
        bins = write_bins(work / "bins", 2)
        _warm_up(contract, bins.root, work / "warm")  # imports and first-call costs: not the first search's
        runs = {"seeded bisect": _tune(contract, bins.root, work / "seeded")}
        if not quick:  # --quick: the default search against the linear one only, to stay within a few minutes
            runs["bisect"] = _tune(contract, bins.root, work / "bisect", seeds=False)
        runs["linear"] = _tune(contract, bins.root, work / "linear", seeds=False, mode="linear")
        linear, linear_s = runs["linear"]
        print(f"model: {len(linear.tunable)} ops the keep_dtype file can name; linear walked to op {linear.grown}")
        for name, (result, seconds) in runs.items():
            print(f"{name:>14}: {len(result.candidates):4d} candidates, {seconds:7.1f} s, found "
                  f"{[op.name for op in result.ops]} ({result.reason or 'passes'})")
        sets = {tuple(op.name for op in result.ops) for result, _ in runs.values()}
        assert len(sets) == 1 and all(result.found for result, _ in runs.values()), "the searches disagree"
        rows: list[Row] = []
        for name in [name for name in runs if name != "linear"]:
            result, seconds = runs[name]
            rows.append((f"{name}: candidates", len(result.candidates) / len(linear.candidates),
                         f"linear search's candidates, lower is better ({len(result.candidates)} vs "
                         f"{len(linear.candidates)}, {len(linear.tunable)} ops)"))
            rows.append((f"{name}: wall time", seconds / linear_s,
                         f"linear search's wall time, lower is better ({seconds:.0f} s vs {linear_s:.0f} s)"))
        return rows
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    for row in main(quick="--quick" in sys.argv[1:]):
        print(f"{row[0]:<30} {row[1]:6.2f}x  {row[2]}")
