"""Small frozen graphs that fail under emulated fp16 for a known reason, and bins for them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from binio.binfile import write_bin
from binio.manifest import BinEntry, DatasetManifest, InputManifest, bin_file_name


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


def write_bins(folder: Path, name: str, shape: tuple[int, ...], batches: int, low: float, high: float,
               seed: int = 0) -> Path:
    """`batches` files of uniform values in [low, high) for the single input `name`:0."""
    rng = np.random.default_rng(seed)
    files = []
    for index in range(batches):
        values = rng.uniform(low, high, size=shape).astype(np.float32)
        path = folder / name / bin_file_name(index)
        files.append(BinEntry(bin_file_name(index), write_bin(path, values), shape[0]))
    DatasetManifest(root=folder, batch=shape[0], samples=shape[0] * batches,
                    inputs=(InputManifest(f"{name}:0", name, "float32", shape, "ND", tuple(files)),)).save()
    return folder
