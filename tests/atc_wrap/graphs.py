"""Tiny frozen graphs written straight as pb + model.json, for conversion cases the shared fixtures lack."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from infer.contract import ModelContract, SourceInfo
from tests.frozen import write_pb_and_contract


def write_frozen(folder: Path, build: Callable[[Any], None], inputs: tuple[str, ...],
                 outputs: tuple[str, ...]) -> ModelContract:
    """Builds a graph with `build(tf)` (constants only, no variables), writes model.pb and its contract."""
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        build(tf)
    source = SourceInfo(path=str(folder / "model.pb"), kind="pb", tf_version=tf.__version__,
                        frozen_with_tf=tf.__version__)
    return write_pb_and_contract(folder, graph.as_graph_def(), inputs, outputs, source)


def build_energy(tf: Any) -> None:
    """energy = sqrt(reduce_sum(square(x))) / 16: intermediates pass 65504 when |x| is a few hundred."""
    x = tf.compat.v1.placeholder(tf.float32, [2, 64], name="x")
    total = tf.reduce_sum(tf.square(x), axis=1, name="total")
    tf.identity(tf.sqrt(total) / 16.0, name="energy")


def build_normalised(tf: Any) -> None:
    """out = x / sqrt(sum(x*x)), an L2 normalisation (the demo's): with |x| near 300 each square passes 65504, fp16
    holds the sum as inf, 1/sqrt(inf) = 0, and every sample's output is 0: finite, the same for every sample, and
    wrong. TensorFlow's vary with x."""
    x = tf.compat.v1.placeholder(tf.float32, [None, 64], name="x")
    norm = tf.sqrt(tf.reduce_sum(tf.square(x, name="square"), axis=1, keepdims=True, name="energy"), name="norm")
    tf.divide(x, norm, name="out")


def build_matmul_sum(tf: Any) -> None:
    """out = reduce_sum(x @ I) / 1024 with x near 2000: only the reduction's result passes 65504."""
    import numpy as np

    x = tf.compat.v1.placeholder(tf.float32, [2, 64], name="x")
    projected = tf.matmul(x, tf.constant(np.eye(64, dtype=np.float32)), name="projected")
    total = tf.reduce_sum(projected, axis=1, name="total")
    tf.identity(total / 1024.0, name="out")


def build_unconvertible(tf: Any) -> None:
    """Three ops tf2onnx 1.17 has no converter for (Igamma, Lgamma, Zeta)."""
    x = tf.compat.v1.placeholder(tf.float32, [2, 4], name="x")
    a = tf.math.igamma(x + 1.0, x + 2.0)
    b = tf.math.zeta(x + 2.0, x + 1.0)
    c = tf.math.lgamma(x + 3.0)
    tf.identity(a + b + c, name="out")


def build_two_in_two_out(tf: Any) -> None:
    """Inputs a (2,4) and b (2,3); outputs head:0 and parts:1 (a second output index), for ATC's list syntaxes."""
    a = tf.compat.v1.placeholder(tf.float32, [2, 4], name="a")
    b = tf.compat.v1.placeholder(tf.float32, [2, 3], name="b")
    joined = tf.concat([a, b], axis=1, name="joined")
    tf.identity(joined * 2.0, name="head")
    tf.split(joined, [3, 4], axis=1, name="parts")


def build_unknown_batch(tf: Any) -> None:
    """x (?,4) -> y: a batch left unknown, for --dynamic-batch."""
    x = tf.compat.v1.placeholder(tf.float32, [None, 4], name="x")
    tf.identity(x * 3.0, name="y")
