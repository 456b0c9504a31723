"""Tiny TF1-style models built inside the tests, with raw tf.nn ops and get_variable (no Keras needed).

Each builder writes a real checkpoint (prefix + .meta + .index + .data) into a folder and returns what the
tests need to know about it. Seeded, so every run builds the same weights.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class BuiltModel:
    prefix: Path  # the checkpoint prefix (folder/model.ckpt)
    inputs: dict[str, tuple[str, tuple[int | None, ...]]]  # tensor name -> (dtype, shape)
    outputs: tuple[str, ...]  # the true output tensor names


def build_small_cnn(folder: Path, *, seed: int = 0) -> BuiltModel:
    """conv -> bias -> relu -> global mean -> dense -> softmax, batch None, 8x8x3 NHWC float32 input."""
    import tensorflow as tf

    tf1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        tf1.set_random_seed(seed)
        images = tf1.placeholder(tf.float32, [None, 8, 8, 3], name="images")
        kernel = tf1.get_variable("conv/kernel", [3, 3, 3, 4], initializer=tf1.glorot_uniform_initializer())
        bias = tf1.get_variable("conv/bias", [4], initializer=tf1.random_normal_initializer(stddev=0.1))
        hidden = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(images, kernel, 1, "SAME"), bias), name="conv/relu")
        pooled = tf.reduce_mean(hidden, axis=[1, 2], name="pool")
        weights = tf1.get_variable("head/weights", [4, 5], initializer=tf1.glorot_uniform_initializer())
        logits = tf.matmul(pooled, weights, name="head/logits")
        tf.nn.softmax(logits, name="probs")
        saver = tf1.train.Saver()
        with tf1.Session(graph=graph) as session:
            session.run(tf1.global_variables_initializer())
            folder.mkdir(parents=True, exist_ok=True)
            prefix = folder / "model.ckpt"
            saver.save(session, str(prefix))
    return BuiltModel(prefix=prefix, inputs={"images:0": ("float32", (None, 8, 8, 3))}, outputs=("probs:0",))
