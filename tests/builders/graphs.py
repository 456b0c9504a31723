"""Small TF1 graphs, each built by a function of `tf` (constants only, no variables), for conversion, precision and
tuning cases the shared checkpoints lack. `graph_of(build)` gives one's GraphDef; `tests.builders.frozen.
write_frozen` writes one as model.pb + model.json."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

Build = Callable[[Any], None]
"""A graph builder: called with the `tensorflow` module inside a fresh graph."""


def graph_of(build: Build) -> Any:
    """The GraphDef `build` makes in a graph of its own."""
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        build(tf)
    return graph.as_graph_def()


def build_exp(tf: Any) -> None:
    """out = exp(x) / 1e6 with x near 12: exp's values near 160000 pass fp16's 65504, the output's near 0.16."""
    x = tf.compat.v1.placeholder(tf.float32, [2, 16], name="x")
    tf.multiply(tf.exp(x, name="grown"), 1e-6, name="out")


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


def build_underflow(tf: Any) -> None:
    """A small CNN with log(y*y + 1e-9) after a conv with small weights: y*y falls under fp16's smallest subnormal
    (6e-8) and 1e-9 rounds to 0 too, so fp16 gives log(0) = -inf where TensorFlow gives about -20."""
    rng = np.random.default_rng(3)
    x = tf.compat.v1.placeholder(tf.float32, [2, 8, 8, 3], name="x")
    kernel = tf.constant((rng.normal(size=(3, 3, 3, 4)) * 1e-4).astype(np.float32), name="conv/kernel")
    conv = tf.nn.conv2d(x, kernel, 1, "SAME", name="conv")
    square = tf.multiply(conv, conv, name="square")
    shifted = tf.add(square, 1e-9, name="shifted")
    logged = tf.math.log(shifted, name="log")
    kernel2 = tf.constant((rng.normal(size=(3, 3, 4, 8)) * 0.05).astype(np.float32), name="conv2/kernel")
    hidden = tf.nn.relu(tf.nn.conv2d(logged, kernel2, 1, "SAME", name="conv2"), name="conv2/relu")
    pooled = tf.reduce_mean(hidden, axis=[1, 2], name="pool")
    weights = tf.constant((rng.normal(size=(8, 5)) * 0.3).astype(np.float32), name="head/weights")
    tf.nn.softmax(tf.matmul(pooled, weights, name="head/logits"), name="probs")


def build_cnn_energy(tf: Any) -> None:
    """A small CNN with an energy term: energy = sqrt(reduce_sum(square(conv))) over each image's 8x8x4 conv
    outputs (some tens each, so every square fits fp16 but their sum, 100000 or more, passes 65504) added to the
    logits of a pooled head: fp16 stores the sum as inf and everything after it reads inf."""
    rng = np.random.default_rng(4)
    x = tf.compat.v1.placeholder(tf.float32, [2, 8, 8, 3], name="x")
    kernel = tf.constant((rng.normal(size=(3, 3, 3, 4)) * 8).astype(np.float32), name="conv/kernel")
    conv = tf.nn.conv2d(x, kernel, 1, "SAME", name="conv")
    square = tf.square(conv, name="square")
    total = tf.reduce_sum(square, axis=[1, 2, 3], name="total")
    energy = tf.divide(tf.sqrt(total, name="sqrt"), 16.0, name="energy")
    pooled = tf.reduce_mean(tf.nn.relu(conv, name="conv/relu"), axis=[1, 2], name="pool")
    weights = tf.constant((rng.normal(size=(4, 5)) * 0.1).astype(np.float32), name="head/weights")
    logits = tf.matmul(pooled, weights, name="head/logits")
    tf.add(logits, tf.expand_dims(energy, 1, name="energy/column"), name="out")


def const_graph_def(dims: Sequence[int], content: bytes = b"", floats: Sequence[float] = ()) -> Any:
    """A GraphDef of one float32 Const ``k`` of shape `dims`, its data `content` (tensor_content) and `floats`
    (float_val) whatever the shape holds, read by an Identity ``y``: the constants that disagree with their shape,
    which the hostile-input tests and battery write."""
    from tensorflow.core.framework import graph_pb2

    graph_def = graph_pb2.GraphDef()
    const = graph_def.node.add(name="k", op="Const")
    const.attr["dtype"].type = 1
    tensor = const.attr["value"].tensor
    tensor.dtype = 1
    for dim in dims:
        tensor.tensor_shape.dim.add().size = dim
    tensor.tensor_content = content
    tensor.float_val.extend(floats)
    graph_def.node.add(name="y", op="Identity", input=["k"]).attr["T"].type = 1
    return graph_def
