"""A frozen graph holding duplicate subgraphs, which tf2onnx merges into one (which twin survives is its choice)."""

from __future__ import annotations

from typing import Any

import numpy as np


def build_twin_mask_adders(tf: Any) -> None:
    """ids-free attention: x (2,6,8), mask (2,6) -> out (2,6,8). Two layers each build the attention mask adder
    ``(1 - mask) * -10000`` from the same mask, as google-research/bert's layers do: the twins are equal
    subgraphs (``layer_0/mask/sub``, ``layer_1/mask/sub``...) that tf2onnx merges into one."""
    rng = np.random.default_rng(41)
    tf1 = tf.compat.v1
    x = tf1.placeholder(tf.float32, [2, 6, 8], name="x")
    mask = tf1.placeholder(tf.float32, [2, 6], name="mask")
    hidden = x
    scale = tf.math.rsqrt(tf.constant(8.0), name="scale")  # computed from constants only: tf2onnx folds it
    for layer in range(2):
        with tf.name_scope(f"layer_{layer}"):
            with tf.name_scope("mask"):
                adder = (1.0 - tf.expand_dims(mask, 1)) * -10000.0  # [2,1,6]
            query = tf.matmul(hidden, tf.constant(rng.standard_normal((8, 8)).astype(np.float32) * 0.3))
            scores = tf.matmul(query, hidden, transpose_b=True) * scale + adder
            weights = tf.nn.softmax(scores, name="probs")
            hidden = tf.nn.relu(tf.matmul(weights, hidden) + hidden, name="out")
    tf.identity(hidden, name="out")


def build_twin_energy(tf: Any) -> None:
    """x (2,64) near 300 -> out (2,): two equal energy heads ``sqrt(reduce_sum(square(x))) / 16`` (scopes a/ and b/,
    merged by tf2onnx into a/'s), added: x*x passes 65504, so each head must compute in fp32 up to its Sqrt."""
    x = tf.compat.v1.placeholder(tf.float32, [2, 64], name="x")
    heads = []
    for scope in ("a", "b"):
        with tf.name_scope(scope):
            total = tf.reduce_sum(tf.square(x, name="Square"), axis=1, name="total")
            heads.append(tf.sqrt(total, name="Sqrt") / 16.0)
    tf.identity(heads[0] + heads[1], name="out")
