"""`infer run` against the loops people write by hand, whole processes: ``python benchmarks/bench_run.py
[--batches N] [--rounds N] [--quick]``.

Builds a CNN of a ResNet stage's widths (TF1 raw ops, 8x112x112x3 batches), freezes it, converts it to the ONNX
stand-in (force_fp32, and force_fp16 for the emulation's cost), writes N batches of bins (default 50), then
alternates (`endtoend.alternate`), each a whole process:
- `infer run --backend onnxrt` against `hand/run_onnxrt.py` (InferenceSession, np.fromfile, tofile);
- `infer run --backend tf` against `hand/run_tf.py` (a TF1 session over the frozen pb);
- `infer run` of the force_fp16 conversion against the force_fp32 one: what the fp16 emulation costs.
Targets: each run >= 0.95x the hand loop's throughput (time <= 1/0.95 = 1.05x). The outputs of each pair are
checked equal byte for byte (fp16 against fp32: not compared, they differ by design).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

from binio.binfile import sha256_file, write_bin
from binio.manifest import BinEntry, DatasetManifest, InputManifest, bin_file_name
from binio.spec import TensorSpec
from ckpt2pb.logs import quiet_tensorflow_logs
from infer.contract import ModelContract, SourceInfo

sys.path.insert(0, str(Path(__file__).resolve().parent))
from endtoend import Row, Side, alternate, hand_command, infer_command, median_note, same_files

from atc_wrap.precision.modes import PrecisionMode

BATCH, SIDE, CHANNELS = 8, 112, 3
WIDTHS = (64, 128, 128, 256)

quiet_tensorflow_logs()  # before the tf backend imports TensorFlow


def build_model(folder: Path, precision_mode: PrecisionMode = "force_fp32") -> ModelContract:
    """conv(64) -> relu -> pool -> conv(128) -> relu -> pool -> conv(128) -> relu -> pool -> conv(256) -> relu ->
    mean -> dense(1000) -> softmax."""
    import tensorflow as tf

    tf.get_logger().setLevel("ERROR")  # TF1 API deprecation notices would bury the figures
    tf1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        tf1.set_random_seed(0)
        images = tf1.placeholder(tf.float32, [BATCH, SIDE, SIDE, CHANNELS], name="images")
        hidden = images
        for index, width in enumerate(WIDTHS):
            kernel = tf1.get_variable(f"conv{index}/kernel", [3, 3, hidden.shape[-1], width],
                                      initializer=tf1.glorot_uniform_initializer())
            hidden = tf.nn.relu(tf.nn.conv2d(hidden, kernel, 1, "SAME"))
            if index < len(WIDTHS) - 1:
                hidden = tf.nn.max_pool2d(hidden, 2, 2, "VALID")
        pooled = tf.reduce_mean(hidden, axis=[1, 2])
        weights = tf1.get_variable("head/weights", [WIDTHS[-1], 1000],
                                   initializer=tf1.glorot_uniform_initializer())
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
        outputs=(TensorSpec("probs:0", "float32", (BATCH, 1000)),),
    ).save()
    from infer.convert._convert import ConvertOptions, convert_model

    return convert_model(contract, ConvertOptions(target="onnx", precision_mode=precision_mode)).contract


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


def only_run(out: Path) -> Path:
    """The OUT/<timestamp> folder `infer run` made."""
    (folder,) = [p for p in out.iterdir() if p.is_dir()]
    return folder


def measure(batches: int, rounds: int) -> list[Row]:
    """Prints the times; rows for run_all.py."""
    work = Path(tempfile.mkdtemp(prefix="bench-run-"))
    try:
        contract = build_model(work / "model")
        fp16 = build_model(work / "model_fp16", "force_fp16")
        bins = write_bins(work / "bins", batches)
        assert contract.converted_path is not None
        shape = ",".join(map(str, (BATCH, SIDE, SIDE, CHANNELS)))
        print(f"run: CNN {BATCH}x{SIDE}x{SIDE}x{CHANNELS} (widths {WIDTHS}, 1000 classes), {batches} batches")
        rows: list[Row] = []
        for backend, hand_args in (
                ("onnxrt", ("run_onnxrt.py", contract.converted_path, bins.root / "images", work / "hand", shape)),
                ("tf", ("run_tf.py", contract.pb_path, bins.root / "images", work / "hand", shape, "images:0",
                        "probs:0"))):
            ours, hand = f"infer run --backend {backend}", f"hand/{hand_args[0]}"
            result = alternate(
                [Side(ours, infer_command("run", contract.path, "--input", bins.root, "-o", work / "ours",
                                          "--backend", backend), work / "ours"),
                 Side(hand, hand_command(*hand_args), work / "hand")],
                rounds, check=lambda: same_files(only_run(work / "ours"), work / "hand"))
            rows.append((f"run {backend}, {batches} batches: time", result.ratio(ours, hand),
                         median_note(result, ours, hand, "<= 1.05x (throughput >= 0.95x), lower is better")))
        result = alternate(
            [Side("force_fp16", infer_command("run", fp16.path, "--input", bins.root, "-o", work / "fp16"),
                  work / "fp16"),
             Side("force_fp32", infer_command("run", contract.path, "--input", bins.root, "-o", work / "fp32"),
                  work / "fp32")], rounds)
        rows.append(("run onnxrt, fp16 emulation: time", result.ratio("force_fp16", "force_fp32"),
                     median_note(result, "force_fp16", "force_fp32", "measured (was 1.21x), lower is better")))
        return rows
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(quick: bool = False) -> list[Row]:
    return measure(batches=5 if quick else 50, rounds=1 if quick else 5)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, help="default 50; 5 with --quick")
    parser.add_argument("--rounds", type=int,
                        help="default 5 (one run on 2 shared cores varies by 30%%); 1 with --quick")
    parser.add_argument("--quick", action="store_true", help="fewer batches, one round")
    args = parser.parse_args()
    measure(batches=args.batches or (5 if args.quick else 50), rounds=args.rounds or (1 if args.quick else 5))
