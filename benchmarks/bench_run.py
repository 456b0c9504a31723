"""`infer run` speed: ``python benchmarks/bench_run.py [--batches N] [--threads N] [--repeat N] [--quick]``.

Builds a medium CNN (TF1 raw ops), freezes it, converts it to the ONNX stand-in, writes N batches of bins, then
measures in this one run, best of --repeat:
- the ONNX Runtime runner (`infer.run.run_model`, backend onnxrt) against a hand-written loop of
  `InferenceSession.run` over the same bins (read with np.fromfile, outputs written with tofile); target >= 0.9x;
- TensorFlow's throughput (backend tf, the golden reference) against ONNX Runtime's.
Figures are ratios against a baseline measured in the same run, so the machine's speed cancels out; `main()`
returns them for benchmarks/run_all.py.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from binio.binfile import sha256_file, write_bin
from binio.manifest import BinEntry, DatasetManifest, InputManifest, bin_file_name
from binio.spec import TensorSpec
from ckpt2pb.logs import quiet_tensorflow_logs
from infer.contract import ModelContract, SourceInfo
from infer.run import RunOptions, run_model
from infer.run_record import load_run

BATCH, SIDE, CHANNELS = 8, 64, 3
Row = tuple[str, float, str]

quiet_tensorflow_logs()  # before the tf backend imports TensorFlow


def build_model(folder: Path) -> ModelContract:
    """conv(32) -> relu -> pool -> conv(64) -> relu -> pool -> conv(64) -> relu -> mean -> dense(10) -> softmax."""
    import tensorflow as tf

    tf.get_logger().setLevel("ERROR")  # TF1 API deprecation notices would bury the figures
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
    from infer.convert import ConvertOptions, convert_model

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


def hand_loop(contract: ModelContract, bins: DatasetManifest, out: Path, threads: int) -> tuple[float, float]:
    """(wall seconds including session creation, seconds inside session.run) for the plain ONNX Runtime loop."""
    import onnxruntime as ort

    assert contract.converted_path is not None
    start = time.perf_counter()
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    session = ort.InferenceSession(str(contract.converted_path), options, providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    out.mkdir(parents=True)
    first = np.fromfile(bins.root / "images" / bins.inputs[0].files[0].name, np.float32)
    session.run(None, {name: first.reshape(BATCH, SIDE, SIDE, CHANNELS)})  # one warm-up, as infer run's default
    inside = 0.0
    for entry in bins.inputs[0].files:
        feed = np.fromfile(bins.root / "images" / entry.name, np.float32).reshape(BATCH, SIDE, SIDE, CHANNELS)
        begin = time.perf_counter()
        (probs,) = session.run(None, {name: feed})
        inside += time.perf_counter() - begin
        probs.tofile(out / f"{Path(entry.name).stem}_output_0.bin")
    return time.perf_counter() - start, inside


def best(results: list[tuple[float, float]]) -> tuple[float, float]:
    return min(r[0] for r in results), min(r[1] for r in results)


def measure(batches: int, threads: int, repeat: int) -> list[Row]:
    """Prints the throughputs; rows for run_all.py."""
    work = Path(tempfile.mkdtemp(prefix="bench-run-"))
    try:
        contract = build_model(work / "model")
        bins = write_bins(work / "bins", batches)
        samples = BATCH * batches

        def by_runner(backend: str) -> Callable[[int], tuple[float, float]]:
            def measure(attempt: int) -> tuple[float, float]:
                start = time.perf_counter()
                result = run_model(contract.path, bins.root, work / f"{backend}-{attempt}",
                                   RunOptions(backend=backend, threads=threads))
                wall = time.perf_counter() - start
                record = load_run(result.folder)
                return wall, sum(record.latency.per_batch_ms) / 1000.0
            return measure

        # Interleaved rounds, best of each: the machine is shared, and a slow spell should hit every contender.
        rounds: dict[str, list[tuple[float, float]]] = {"hand": [], "onnxrt": [], "tf": []}
        for attempt in range(repeat):
            rounds["hand"].append(hand_loop(contract, bins, work / f"hand-{attempt}", threads))
            rounds["onnxrt"].append(by_runner("onnxrt")(attempt))
            rounds["tf"].append(by_runner("tf")(attempt))
        hand_wall, hand_inside = best(rounds["hand"])
        ort_wall, ort_inside = best(rounds["onnxrt"])
        tf_wall, tf_inside = best(rounds["tf"])

        def rate(seconds: float) -> str:
            return f"{samples / seconds:9.1f} samples/s"

        print(f"model: CNN {BATCH}x{SIDE}x{SIDE}x{CHANNELS}, {batches} batches, {threads} thread(s), "
              f"best of {repeat}")
        print(f"hand loop, session.run only       {rate(hand_inside)}")
        print(f"onnxrt runner, infer calls only   {rate(ort_inside)}   {hand_inside / ort_inside:.3f}x the hand loop")
        print(f"hand loop, end to end             {rate(hand_wall)}")
        print(f"infer run onnxrt, end to end      {rate(ort_wall)}   {hand_wall / ort_wall:.3f}x the hand loop "
              "(+ preflight, run.json, atomic writes)")
        print(f"infer run tf, infer calls only    {rate(tf_inside)}   {ort_inside / tf_inside:.3f}x onnxrt")
        print(f"infer run tf, end to end          {rate(tf_wall)}   {ort_wall / tf_wall:.3f}x onnxrt")
        return [("run onnxrt, session.run only", hand_inside / ort_inside,
                 "throughput vs hand-written InferenceSession.run loop, target >= 0.9"),
                ("run onnxrt, end to end", hand_wall / ort_wall,
                 "throughput vs the hand loop end to end (+ preflight, run.json, atomic writes), target >= 0.9"),
                ("run tf, end to end", ort_wall / tf_wall, "TensorFlow's throughput vs ONNX Runtime's")]
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(quick: bool = False) -> list[Row]:
    return measure(batches=10 if quick else 40, threads=1, repeat=1 if quick else 3)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, help="default 40; 10 with --quick")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=int, help="default 3; 1 with --quick")
    parser.add_argument("--quick", action="store_true", help="fewer batches, one round")
    args = parser.parse_args()
    measure(batches=args.batches or (10 if args.quick else 40), threads=args.threads,
            repeat=args.repeat or (1 if args.quick else 3))
