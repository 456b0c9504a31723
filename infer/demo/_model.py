"""The demo's checkpoint: a small ResNet-style TF1 training graph, the kind ATC users bring.

Raw ``tf.nn`` ops and ``tf.compat.v1.get_variable`` (no Keras): conv + fused batch norm + ReLU stem,
``max_pool_with_argmax``, two bottleneck blocks with projection shortcuts, global average pool, dropout steered by
an ``is_training`` PlaceholderWithDefault through ``tf.cond``, a dense head and a softmax; batch ``None``. It is
trained for a few seconds (Adam, so the checkpoint also holds optimizer slots and the meta graph the training ops,
as real ones do) on samples of the demo dataset's rule, so its answers are meaningful: the class is the colour of
the shape in the image. Seeded and run single-threaded, so the same seed writes the same weights.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from binio.atomic import write_json_atomic
from binio.binfile import sha256_file
from infer.demo._dataset import CLASSES, IMAGE_SIZE, make_samples

INPUT = "images:0"
OUTPUT = "probs:0"
SWITCH = "is_training:0"
TRAIN_SEED = 1000  # the training samples' seed: a different stream from the dataset written to disk
STAMP = "demo-model.json"  # what was built, with the sha256 of every checkpoint file


@dataclass(frozen=True)
class DemoModel:
    prefix: Path  # folder/model.ckpt
    input: str
    output: str
    switch: str
    input_shape: tuple[int | None, ...]
    classes: tuple[str, ...]
    train_accuracy: float  # on the last training batch, dropout off


def _conv_bn_relu(tf: Any, x: Any, name: str, out_channels: int, kernel: int, stride: int = 1,
                  relu: bool = True) -> Any:
    tf1 = tf.compat.v1
    in_channels = int(x.shape[-1])
    with tf1.variable_scope(name):
        weights = tf1.get_variable("weights", [kernel, kernel, in_channels, out_channels],
                                   initializer=tf1.variance_scaling_initializer(scale=2.0))
        gamma = tf1.get_variable("bn/gamma", [out_channels], initializer=tf1.ones_initializer())
        beta = tf1.get_variable("bn/beta", [out_channels], initializer=tf1.zeros_initializer())
        # Inference-mode batch norm on moving statistics, as a frozen ResNet has it; they are not trained here.
        mean = tf1.get_variable("bn/moving_mean", [out_channels], trainable=False,
                                initializer=tf1.zeros_initializer())
        variance = tf1.get_variable("bn/moving_variance", [out_channels], trainable=False,
                                    initializer=tf1.ones_initializer())
        y = tf.nn.conv2d(x, weights, strides=stride, padding="SAME")
        y, _, _ = tf1.nn.fused_batch_norm(y, gamma, beta, mean=mean, variance=variance, epsilon=1e-3,
                                          is_training=False)
        return tf.nn.relu(y) if relu else y


def _bottleneck(tf: Any, x: Any, name: str, width: int, out_channels: int, stride: int) -> Any:
    tf1 = tf.compat.v1
    with tf1.variable_scope(name):
        shortcut = _conv_bn_relu(tf, x, "shortcut", out_channels, 1, stride, relu=False)
        y = _conv_bn_relu(tf, x, "reduce", width, 1)
        y = _conv_bn_relu(tf, y, "conv", width, 3, stride)
        y = _conv_bn_relu(tf, y, "expand", out_channels, 1, relu=False)
        return tf.nn.relu(y + shortcut, name="out")


def _settings(seed: int, steps: int, batch: int, trouble: bool) -> dict[str, int]:
    return {"seed": seed, "steps": steps, "batch": batch, "image_size": IMAGE_SIZE, "classes": len(CLASSES),
            "fp16_trouble": int(trouble)}


def _demo_model(prefix: Path, accuracy: float) -> DemoModel:
    return DemoModel(prefix=prefix, input=INPUT, output=OUTPUT, switch=SWITCH,
                     input_shape=(None, IMAGE_SIZE, IMAGE_SIZE, 3), classes=CLASSES, train_accuracy=accuracy)


def _checkpoint_files(prefix: Path) -> list[Path]:
    return sorted(prefix.parent.glob(prefix.name + ".*"))


def _reusable(folder: Path, settings: dict[str, int]) -> DemoModel | None:
    """The checkpoint an earlier demo built with the same settings, when every file of it is as it was written.

    Reusing it keeps a re-run's inputs byte-identical: TensorFlow names the functions of ``tf.cond`` from a
    process-wide counter, so a rebuild inside a process that built one already gives a different .meta.
    """
    try:
        stamp = json.loads((folder / STAMP).read_text())
        prefix = folder / str(stamp["prefix"])
        if stamp["settings"] != settings:
            return None
        files = {p.name: sha256_file(p) for p in _checkpoint_files(prefix)}
        if not files or files != stamp["files"]:
            return None
        return _demo_model(prefix, float(stamp["train_accuracy"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def build_demo_model(folder: Path, *, seed: int = 0, steps: int = 30, batch: int = 32,
                     fp16_trouble: bool = False) -> DemoModel:
    """Builds, trains for `steps` Adam steps, and saves ``folder/model.ckpt`` (+ .meta, .index, .data); reuses
    the one already there when it was built with the same settings and is unchanged. `fp16_trouble`: the pooled
    features are L2-normalised on a scale whose sum of squares passes fp16's 65504 (`_l2_normalised`)."""
    settings = _settings(seed, steps, batch, fp16_trouble)
    reused = _reusable(folder, settings)
    if reused is not None:
        return reused
    model = _train(folder, seed=seed, steps=steps, batch=batch, trouble=fp16_trouble)
    write_json_atomic(folder / STAMP, {
        "prefix": model.prefix.name, "settings": settings, "train_accuracy": model.train_accuracy,
        "files": {p.name: sha256_file(p) for p in _checkpoint_files(model.prefix)},
    })
    return model


# The fp16 trouble: L2 normalisation written by hand on a wide scale, as embedding heads often are. Each scaled
# feature fits fp16 (a few hundred), their sum of squares (tens of thousands a feature) does not: under force_fp16
# the sum is inf, its rsqrt 0, and every image gets the same probabilities. Kept in fp32, that one sum is fine.
TROUBLE_SCALE = 100.0


def _l2_normalised(tf: Any, features: Any) -> Any:
    with tf.compat.v1.variable_scope("l2norm"):
        scaled = tf.multiply(features, TROUBLE_SCALE, name="scaled")
        energy = tf.reduce_sum(tf.square(scaled, name="square"), axis=1, keepdims=True, name="energy")
        return tf.multiply(scaled * tf.math.rsqrt(energy + 1e-6, name="inverse_norm"), 8.0, name="normalised")


def _train(folder: Path, *, seed: int, steps: int, batch: int, trouble: bool = False) -> DemoModel:
    import numpy as np
    import tensorflow as tf

    tf1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        tf1.set_random_seed(seed)
        images = tf1.placeholder(tf.float32, [None, IMAGE_SIZE, IMAGE_SIZE, 3], name="images")
        is_training = tf1.placeholder_with_default(False, [], name="is_training")
        x = _conv_bn_relu(tf, images, "stem", 16, 3)
        x, _argmax = tf.nn.max_pool_with_argmax(x, ksize=2, strides=2, padding="SAME", name="stem/pool")
        x = _bottleneck(tf, x, "block1", 8, 32, 1)
        x = _bottleneck(tf, x, "block2", 16, 64, 2)
        features = tf.reduce_mean(x, axis=[1, 2], name="global_pool")
        features = tf.cond(is_training, lambda: tf.nn.dropout(features, rate=0.2, seed=seed),
                           lambda: tf.identity(features), name="dropout")
        if trouble:
            features = _l2_normalised(tf, features)
        weights = tf1.get_variable("head/weights", [64, len(CLASSES)],
                                   initializer=tf1.glorot_uniform_initializer())
        bias = tf1.get_variable("head/bias", [len(CLASSES)], initializer=tf1.zeros_initializer())
        logits = tf.nn.bias_add(tf.matmul(features, weights), bias, name="logits")
        probs = tf.nn.softmax(logits, name="probs")

        labels = tf1.placeholder(tf.int64, [None], name="labels")
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
        global_step = tf1.train.get_or_create_global_step()
        train_op = tf1.train.AdamOptimizer(0.01).minimize(loss, global_step=global_step)
        saver = tf1.train.Saver()

        # One thread each: reductions then sum in one order, so the same seed gives the same weights.
        config = tf1.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)
        with tf1.Session(graph=graph, config=config) as session:
            session.run(tf1.global_variables_initializer())
            train_images, train_labels = make_samples(steps * batch, TRAIN_SEED + seed)
            scaled = train_images.astype(np.float32) / 255.0
            for step in range(steps):
                rows = slice(step * batch, (step + 1) * batch)
                session.run(train_op, {images: scaled[rows], labels: train_labels[rows], is_training: True})
            last = slice((steps - 1) * batch, steps * batch)
            predicted = session.run(probs, {images: scaled[last]}).argmax(axis=1)
            accuracy = float((predicted == train_labels[last]).mean())
            folder.mkdir(parents=True, exist_ok=True)
            prefix = folder / "model.ckpt"
            saver.save(session, str(prefix))
    return _demo_model(prefix, accuracy)
