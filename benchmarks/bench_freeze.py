"""`infer freeze` with its verification against without it, and against the script people write by hand, whole
processes: ``python benchmarks/bench_freeze.py [--quick]``.

Builds a TF1 checkpoint of a wide MLP (three 4096x4096 dense layers, 192 MiB of float32 weights; ``--quick``: 512),
then alternates (`endtoend.alternate`) `infer freeze` (verifying: the checkpoint's graph and the frozen one run
on the same seeded inputs), `infer freeze --no-verify`, and `hand/freeze_tf.py` (restore, convert_variables_to_
constants, write). Targets: verifying <= 1.15x the time of not verifying, peak memory <= 1.3x. The two freezes'
model.pb are checked to hold equal graphs; the hand script's graph is not compared (freeze edits the graph).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from endtoend import Row, Side, alternate, hand_command, infer_command, median_note


def build_checkpoint(folder: Path, width: int, layers: int) -> Path:
    """x (None, width) -> `layers` x (dense + relu) -> y; saved with its meta graph; the prefix."""
    import numpy as np
    import tensorflow as tf

    tf1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        hidden = tf1.placeholder(tf.float32, [None, width], name="x")
        for index in range(layers):
            kernel = tf1.get_variable(f"dense{index}/kernel", [width, width],
                                      initializer=tf1.random_normal_initializer(stddev=1 / np.sqrt(width), seed=index))
            bias = tf1.get_variable(f"dense{index}/bias", [width], initializer=tf1.zeros_initializer())
            hidden = tf.nn.relu(tf.matmul(hidden, kernel) + bias)
        tf.identity(hidden, name="y")
        saver = tf1.train.Saver()
        with tf1.Session(graph=graph) as session:
            session.run(tf1.global_variables_initializer())
            folder.mkdir(parents=True)
            return Path(saver.save(session, str(folder / "model.ckpt")))


def same_graph(ours: Path, theirs: Path) -> str:
    """The two model.pb hold equal GraphDefs (protobuf's serialisation of maps is not byte-stable run to run)."""
    from ckpt2pb.protobuf import read_graph_def

    graphs = [read_graph_def(path) for path in (ours / "model.pb", theirs / "model.pb")]
    if graphs[0] != graphs[1]:
        raise AssertionError(f"{ours / 'model.pb'} and {theirs / 'model.pb'} hold different graphs")
    return "the two model.pb hold equal graphs"


def measure(width: int, layers: int, rounds: int) -> list[Row]:
    work = Path(tempfile.mkdtemp(prefix="bench-freeze-"))
    try:
        prefix = build_checkpoint(work / "checkpoint", width, layers)
        weights_mib = layers * (width * width + width) * 4 / 2**20
        print(f"freeze: MLP of {layers} {width}x{width} dense layers ({weights_mib:.0f} MiB of weights)")

        def freeze(name: str, *extra: str) -> Side:
            out = work / name
            return Side(" ".join(("infer freeze", *extra)).strip(),
                        infer_command("freeze", prefix, "-o", out, "--outputs", "y:0", "--inputs", "x:0", "--batch",
                                      "8", *extra), out)

        verifying, plain = freeze("verified"), freeze("unverified", "--no-verify")
        hand = Side("hand/freeze_tf.py", hand_command("freeze_tf.py", prefix, "y", work / "hand.pb"),
                    work / "hand.pb")
        result = alternate([verifying, plain, hand], rounds,
                           check=lambda: same_graph(work / "verified", work / "unverified"))
        ours, theirs = result.runs[verifying.name], result.runs[plain.name]
        return [("verifying vs --no-verify: time", result.ratio(verifying.name, plain.name),
                 median_note(result, verifying.name, plain.name, "<= 1.15x, lower is better")),
                ("verifying vs --no-verify: peak RSS", ours.median_peak_mib / theirs.median_peak_mib,
                 f"{ours.median_peak_mib:.0f} MiB vs {theirs.median_peak_mib:.0f} MiB; target <= 1.3x"),
                ("--no-verify vs hand script: time", result.ratio(plain.name, hand.name),
                 f"{plain.name} {theirs.describe()} vs {hand.name} {result.runs[hand.name].describe()}; "
                 f"{result.load()}; the hand script's graph is not compared (freeze edits the graph); "
                 "target none (for scale), lower is better")]
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(quick: bool = False) -> list[Row]:
    return measure(512 if quick else 4096, 3, rounds=1 if quick else 3)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="512-wide layers, one round")
    main(quick=parser.parse_args().quick)
