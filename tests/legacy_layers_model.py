"""A TF1-style graph written with `tf.compat.v1.layers`, as people retraining TF1 code on TF 2.x write it: under
Keras 3 those layers need tf_keras and TF_USE_LEGACY_KERAS=1 before TensorFlow is imported, so this runs as its
own process: ``python -m tests.legacy_layers_model FOLDER`` writes FOLDER/model.ckpt and FOLDER/expected.npz."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def main(folder: Path) -> None:
    os.environ["TF_USE_LEGACY_KERAS"] = "1"
    import numpy as np
    import tensorflow as tf

    tf1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        tf1.set_random_seed(16)
        images = tf1.placeholder(tf.float32, [None, 8, 8, 3], name="images")
        is_training = tf1.placeholder_with_default(False, [], name="is_training")
        hidden = tf1.layers.conv2d(images, 4, 3, padding="same", activation=tf.nn.relu)
        hidden = tf1.layers.batch_normalization(hidden, training=is_training)
        hidden = tf.reduce_mean(hidden, axis=[1, 2])
        hidden = tf1.layers.dropout(hidden, rate=0.5, training=is_training)  # steered by the switch
        hidden = tf1.layers.dropout(hidden, rate=0.5, training=False)  # off for good
        probs = tf.nn.softmax(tf1.layers.dense(hidden, 5), name="probs")
        with tf1.Session(graph=graph) as session:
            session.run(tf1.global_variables_initializer())
            feed = np.random.default_rng(16).standard_normal((2, 8, 8, 3)).astype(np.float32)
            np.savez(folder / "expected.npz", images=feed, probs=session.run(probs, {images: feed}))
            tf1.train.Saver().save(session, str(folder / "model.ckpt"))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
