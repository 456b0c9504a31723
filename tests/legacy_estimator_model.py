"""An Estimator-style model_dir written with `tf.compat.v1.layers` (what tensorflow/models' r1 ResNet and the Ascend
migration guide's models call): `model_fn(images, training)` with `training` a Python bool, trained from a tf.data
iterator with its UPDATE_OPS, saved as `model.ckpt-<step>` (the TRAIN graph); the PREDICT graph built from the same
model_fn and checkpoint gives the expected logits. tf.compat.v1.layers needs tf_keras and TF_USE_LEGACY_KERAS=1
before TensorFlow is imported, so this runs as its own process:
``python -m tests.legacy_estimator_model FOLDER`` writes FOLDER/model_dir and FOLDER/expected.npz."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

BATCH = 4
STEPS = 10


def _model_fn(tf: Any, images: Any, training: bool) -> Any:
    tf1 = tf.compat.v1
    hidden = tf1.layers.conv2d(images, 6, 3, padding="same", use_bias=False, name="conv")
    hidden = tf.nn.relu(tf1.layers.batch_normalization(hidden, training=training, name="bn_conv"))
    hidden = tf.reduce_mean(hidden, axis=[1, 2])
    hidden = tf1.layers.dense(hidden, 16, use_bias=False, name="dense")
    hidden = tf.nn.relu(tf1.layers.batch_normalization(hidden, training=training, name="bn_dense"))
    hidden = tf1.layers.dropout(hidden, rate=0.5, training=training)
    return tf.identity(tf1.layers.dense(hidden, 5, name="head"), name="logits")


def main(folder: Path) -> None:
    os.environ["TF_USE_LEGACY_KERAS"] = "1"
    import numpy as np
    import tensorflow as tf

    tf1 = tf.compat.v1
    rng = np.random.default_rng(41)
    images = (rng.normal(size=(BATCH * STEPS, 8, 8, 3)) * 2.0 + 0.5).astype(np.float32)
    labels = rng.integers(0, 5, BATCH * STEPS).astype(np.int32)
    model_dir = folder / "model_dir"
    graph = tf.Graph()
    with graph.as_default():
        tf1.set_random_seed(41)
        step = tf1.train.get_or_create_global_step()
        dataset = tf.data.Dataset.from_tensor_slices((images, labels)).batch(BATCH).repeat()
        features, targets = tf1.data.make_one_shot_iterator(dataset).get_next()
        loss = tf1.losses.sparse_softmax_cross_entropy(targets, _model_fn(tf, features, True))
        with tf.control_dependencies(tf1.get_collection(tf1.GraphKeys.UPDATE_OPS)):
            train_op = tf1.train.MomentumOptimizer(0.05, 0.9).minimize(loss, global_step=step)
        with tf1.Session(graph=graph) as session:
            session.run(tf1.global_variables_initializer())
            for _ in range(STEPS):
                session.run(train_op)
            tf1.train.Saver().save(session, str(model_dir / "model.ckpt"), global_step=STEPS)
    sample = (rng.normal(size=(BATCH, 8, 8, 3)) * 2.0 + 0.5).astype(np.float32)
    predict = tf.Graph()
    with predict.as_default():
        placeholder = tf1.placeholder(tf.float32, [None, 8, 8, 3])
        logits = _model_fn(tf, placeholder, False)
        with tf1.Session(graph=predict) as session:
            tf1.train.Saver().restore(session, str(model_dir / f"model.ckpt-{STEPS}"))
            np.savez(folder / "expected.npz", images=sample, logits=session.run(logits, {placeholder: sample}))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
