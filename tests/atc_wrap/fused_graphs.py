"""A frozen graph whose weights tf2onnx hands to nodes it names itself, for the fp32 stand-in's exactness.

tf2onnx fuses a MatMul and the Add after it into one Gemm (``MatMul_Gemm__1``), converts a depthwise convolution into
a ``Conv__<n>`` into which it then folds the BiasAdd, folds a batch norm into the convolution before it, turns a
conv1d's ExpandDims into an Unsqueeze of the kernel; the weights those nodes read have no TF reader of the same name.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def build_inserted_readers(tf: Any) -> None:
    """x (2,8,8,3), s (2,16,4) -> out (2,5): conv + folded batch norm, depthwise conv + bias, conv1d + bias,
    a dense layer (MatMul + Add: a Gemm), an embedding-like Gather of a weight concatenated to it, softmax."""
    rng = np.random.default_rng(2024)
    tf1 = tf.compat.v1

    def weight(*shape: int, scale: float = 0.3, shift: float = 0.0) -> Any:
        return tf.constant((rng.standard_normal(shape) * scale + shift).astype(np.float32))

    x = tf1.placeholder(tf.float32, [2, 8, 8, 3], name="x")
    s = tf1.placeholder(tf.float32, [2, 16, 4], name="s")
    h = tf.nn.conv2d(x, weight(3, 3, 3, 8), 1, "SAME", name="conv")
    h, _, _ = tf1.nn.fused_batch_norm(h, weight(8, shift=1.0), weight(8), mean=weight(8),
                                      variance=tf.abs(weight(8)) + 0.5, is_training=False, name="bn")
    h = tf.nn.relu(h)
    h = tf.nn.depthwise_conv2d(h, weight(3, 3, 8, 1), [1, 1, 1, 1], "SAME", name="depthwise")
    h = tf.nn.bias_add(h, weight(8), name="depthwise_bias")
    pooled = tf.reduce_mean(h, axis=[1, 2], name="pool")
    g = tf.nn.conv1d(s, weight(3, 4, 6), 1, "SAME", name="conv1d")
    g = tf.reduce_max(tf.nn.bias_add(g, weight(6)), axis=1, name="conv1d_pool")
    table = weight(3, 2)
    picked = tf.gather(table, tf.constant([2, 0]), name="embedding")
    joined = tf.concat([pooled, g, picked], 1, name="joined")
    dense = tf.add(tf.matmul(joined, weight(16, 5), name="dense"), weight(5), name="dense_bias")
    tf.nn.softmax(dense, name="out")
