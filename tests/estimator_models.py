"""An Estimator's model_dir, reproduced with plain tf.compat.v1 code.

`tf.estimator` left TensorFlow in 2.16, and tensorflow-estimator's last release (2.15.0) does not import on TF 2.21
(`tensorflow.python.distribute.estimator_training` is gone), so no Estimator can be built here. What the Estimator
leaves is reproduced instead, as its train_and_evaluate writes it: one `model_fn(features, mode)` whose layers take
`training = mode == TRAIN` as a Python bool; the TRAIN graph fed by an `input_fn`'s tf.data iterator, with a
global step, an optimizer whose train op waits for the UPDATE_OPS (the moving averages), checkpoints
`model.ckpt-<step>` with their `.meta` (the TRAIN graph), a `checkpoint` file and `graph.pbtxt` in model_dir. The
PREDICT graph, what `export_saved_model` would write, is the same model_fn with training false, fed by a
placeholder and restored from the same checkpoint.

The model holds what r1 ResNet and friends hold: a fused batch norm (`is_training` a Python bool, its moving
statistics as inputs 3-4), a batch norm of separate ops on a rank-2 tensor (moments, as Keras writes it where the
fused kernel does not apply), and a dropout with a Python-number rate; each updates its moving averages as Keras'
batch norm does (`assign_sub(var, (var - batch_stat) * (1 - momentum))`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

CLASSES = 5
IMAGE = (8, 8, 3)
BATCH = 4
MOMENTUM = 0.9
STEPS = 12


@dataclass(frozen=True)
class EstimatorDir:
    model_dir: Path
    step: int
    predict: Any  # (images: np.ndarray) -> logits the PREDICT graph computes from the same checkpoint
    train_graph_logits: Any  # (images) -> logits the checkpoint's own (TRAIN) graph computes, fed as given


def _batch_norm(tf: Any, x: Any, training: bool, name: str, *, fused: bool, moving_stats_in_op: bool = True) -> Any:
    """tf.layers' batch norm of raw ops: gamma, beta, moving mean and variance; fused over NHWC, else moments over
    every axis but the last; in training, the moving averages updated through UPDATE_OPS."""
    tf1 = tf.compat.v1
    channels = int(x.shape[-1])
    with tf1.variable_scope(name):
        gamma = tf1.get_variable("gamma", [channels], initializer=tf1.ones_initializer())
        beta = tf1.get_variable("beta", [channels], initializer=tf1.zeros_initializer())
        moving_mean = tf1.get_variable("moving_mean", [channels], initializer=tf1.zeros_initializer(),
                                       trainable=False)
        moving_variance = tf1.get_variable("moving_variance", [channels], initializer=tf1.ones_initializer(),
                                           trainable=False)
        if fused:
            if training:
                stats = (moving_mean, moving_variance) if moving_stats_in_op else (None, None)
                out, mean, variance = tf1.nn.fused_batch_norm(x, gamma, beta, mean=stats[0], variance=stats[1],
                                                              epsilon=1e-3, is_training=True)
            else:
                out, _, _ = tf1.nn.fused_batch_norm(x, gamma, beta, mean=moving_mean, variance=moving_variance,
                                                    epsilon=1e-3, is_training=False)
        else:
            if training:
                mean, variance = tf.nn.moments(x, list(range(len(x.shape) - 1)))
            else:
                mean, variance = moving_mean, moving_variance
            out = tf.nn.batch_normalization(x, mean, variance, beta, gamma, 1e-3)
        if training:
            for variable, value in ((moving_mean, mean), (moving_variance, variance)):
                with tf1.name_scope("AssignMovingAvg"):
                    delta = (variable - value) * (1.0 - MOMENTUM)
                    tf1.add_to_collection(tf1.GraphKeys.UPDATE_OPS, tf1.assign_sub(variable, delta))
    return out


def model_fn(tf: Any, images: Any, training: bool, *, moving_stats_in_op: bool = True) -> Any:
    """conv -> fused batch norm -> relu -> global mean -> dense -> batch norm (moments) -> relu -> dropout ->
    logits."""
    tf1 = tf.compat.v1
    kernel = tf1.get_variable("conv/kernel", [3, 3, 3, 6], initializer=tf1.glorot_uniform_initializer(seed=1))
    hidden = tf.nn.conv2d(images, kernel, 1, "SAME")
    hidden = tf.nn.relu(_batch_norm(tf, hidden, training, "bn_conv", fused=True,
                                    moving_stats_in_op=moving_stats_in_op))
    pooled = tf.reduce_mean(hidden, axis=[1, 2])
    dense = tf1.get_variable("dense/kernel", [6, 16], initializer=tf1.glorot_uniform_initializer(seed=2))
    features = tf.nn.relu(_batch_norm(tf, tf.matmul(pooled, dense), training, "bn_dense", fused=False))
    if training:
        features = tf.nn.dropout(features, rate=0.5)
    head = tf1.get_variable("head/kernel", [16, CLASSES], initializer=tf1.glorot_uniform_initializer(seed=3))
    return tf.identity(tf.matmul(features, head), name="logits")


def _data(count: int) -> tuple[Any, Any]:
    import numpy as np

    rng = np.random.default_rng(31)
    images = (rng.normal(size=(count, *IMAGE)) * 2.0 + 0.5).astype(np.float32)
    return images, rng.integers(0, CLASSES, count).astype(np.int32)


def build_estimator_dir(model_dir: Path, *, moving_stats_in_op: bool = True) -> EstimatorDir:
    """Trains `STEPS` steps the way an Estimator does and leaves its model_dir; returns how to run the PREDICT
    graph and the checkpoint's own graph on images."""
    import tensorflow as tf

    tf1 = tf.compat.v1
    images, labels = _data(BATCH * STEPS)
    graph = tf.Graph()
    with graph.as_default():
        tf1.set_random_seed(5)
        global_step = tf1.train.get_or_create_global_step()
        dataset = tf.data.Dataset.from_tensor_slices((images, labels)).batch(BATCH).repeat()
        features, targets = tf1.data.make_one_shot_iterator(dataset).get_next()
        logits = model_fn(tf, features, True, moving_stats_in_op=moving_stats_in_op)
        loss = tf1.losses.sparse_softmax_cross_entropy(targets, logits)
        with tf.control_dependencies(tf1.get_collection(tf1.GraphKeys.UPDATE_OPS)):
            train_op = tf1.train.MomentumOptimizer(0.05, 0.9).minimize(loss, global_step=global_step)
        saver = tf1.train.Saver()
        with tf1.Session(graph=graph) as session:
            session.run(tf1.global_variables_initializer())
            for _ in range(STEPS):
                session.run(train_op)
            model_dir.mkdir(parents=True, exist_ok=True)
            saver.save(session, str(model_dir / "model.ckpt"), global_step=STEPS)
        tf1.io.write_graph(graph, str(model_dir), "graph.pbtxt")
    checkpoint = str(model_dir / f"model.ckpt-{STEPS}")

    def predict(batch: Any) -> Any:
        predict_graph = tf.Graph()
        with predict_graph.as_default():
            placeholder = tf1.placeholder(tf.float32, [None, *IMAGE], name="images")
            out = model_fn(tf, placeholder, False)
            with tf1.Session(graph=predict_graph) as session:
                tf1.train.Saver().restore(session, checkpoint)
                return session.run(out, {placeholder: batch})

    def train_graph_logits(batch: Any) -> Any:
        train_graph = tf.Graph()
        with train_graph.as_default(), tf1.Session(graph=train_graph) as session:
            tf1.train.import_meta_graph(checkpoint + ".meta").restore(session, checkpoint)
            return session.run("logits:0", {"IteratorGetNext:0": batch})

    return EstimatorDir(model_dir=model_dir, step=STEPS, predict=predict, train_graph_logits=train_graph_logits)
