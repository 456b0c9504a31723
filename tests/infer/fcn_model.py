"""A fully convolutional TF1 checkpoint for the dynamic-shape tests: convs with relus, global mean, dense, softmax.
Any batch, H and W go through it, so one checkpoint serves batch, image-size, dims and range gears."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


def build_fcn(folder: Path, convs: Sequence[tuple[int, int]], *, seed: int, classes: int = 5) -> Path:
    """images [None,None,None,3] -> conv 3x3 SAME + relu per (channels, stride) in `convs`, the last relu named
    `features` (its H,W follow the input's) -> global mean -> dense -> `probs`; the checkpoint prefix."""
    import tensorflow as tf

    tf1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        tf1.set_random_seed(seed)
        hidden = tf1.placeholder(tf.float32, [None, None, None, 3], name="images")
        channels = 3
        for index, (width, stride) in enumerate(convs):
            kernel = tf1.get_variable(f"conv{index}/kernel", [3, 3, channels, width],
                                      initializer=tf1.glorot_uniform_initializer())
            last = index == len(convs) - 1
            hidden = tf.nn.relu(tf.nn.conv2d(hidden, kernel, stride, "SAME"), name="features" if last else None)
            channels = width
        weights = tf1.get_variable("head/weights", [channels, classes], initializer=tf1.glorot_uniform_initializer())
        tf.nn.softmax(tf.matmul(tf.reduce_mean(hidden, axis=[1, 2]), weights), name="probs")
        with tf1.Session(graph=graph) as session:
            session.run(tf1.global_variables_initializer())
            folder.mkdir(parents=True, exist_ok=True)
            tf1.train.Saver().save(session, str(folder / "model.ckpt"))
    return folder / "model.ckpt"
