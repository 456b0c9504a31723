"""Tiny TF1-style models built inside the tests, with raw tf.nn ops and get_variable (no Keras needed).

Each builder writes a real checkpoint (prefix + .meta + .index + .data) into a folder and returns what the
tests need to know about it. Seeded, so every run builds the same weights.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any


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


# ---- Models for the freeze and inspect tests: each mimics one shape of graph users bring. ----


@dataclass(frozen=True)
class ReferenceModel:
    """A model source with what its framework computed at build time, to check a frozen pb against."""

    path: Path  # what the user gives to infer inspect / freeze
    inputs: dict[str, tuple[str, tuple[int | None, ...]]]  # tensor name -> (dtype, shape) as the graph has them
    outputs: tuple[str, ...]  # the true output tensor names
    feeds: dict[str, Any]  # input tensor name -> numpy array (batch `batch`)
    expected: dict[str, Any]  # output tensor name -> numpy array the framework computed for `feeds`
    batch: int


def _save_checkpoint(graph: Any, session: Any, folder: Path, *, global_step: int | None = None) -> Path:
    import tensorflow as tf

    with graph.as_default():
        saver = tf.compat.v1.train.Saver()
    folder.mkdir(parents=True, exist_ok=True)
    saved = saver.save(session, str(folder / "model.ckpt"), global_step=global_step)
    return Path(saved)


def build_resnet_like(folder: Path, *, seed: int = 1, batch: int = 2) -> ReferenceModel:
    """conv -> fused batch norm -> relu -> max_pool_with_argmax -> residual block -> global mean -> dense ->
    dropout under tf.cond(is_training) -> softmax; batch None; a labels placeholder, a loss and an optimizer
    that inference does not need."""
    import numpy as np
    import tensorflow as tf

    tf1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        tf1.set_random_seed(seed)
        images = tf1.placeholder(tf.float32, [None, 16, 16, 3], name="images")
        labels = tf1.placeholder(tf.int32, [None], name="labels")
        is_training = tf1.placeholder_with_default(False, [], name="is_training")

        def conv_bn(x: Any, name: str, channels_in: int, channels_out: int) -> Any:
            with tf1.variable_scope(name):
                kernel = tf1.get_variable("kernel", [3, 3, channels_in, channels_out],
                                          initializer=tf1.glorot_uniform_initializer())
                gamma = tf1.get_variable("gamma", [channels_out], initializer=tf1.random_uniform_initializer(0.5, 1.5))
                beta = tf1.get_variable("beta", [channels_out], initializer=tf1.random_normal_initializer(stddev=0.1))
                mean = tf1.get_variable("moving_mean", [channels_out], trainable=False,
                                        initializer=tf1.random_normal_initializer(stddev=0.1))
                variance = tf1.get_variable("moving_variance", [channels_out], trainable=False,
                                            initializer=tf1.random_uniform_initializer(0.5, 1.5))
                conv = tf.nn.conv2d(x, kernel, 1, "SAME")
                normed, _, _ = tf1.nn.fused_batch_norm(conv, gamma, beta, mean, variance, is_training=False)
                return normed

        stem = tf.nn.relu(conv_bn(images, "stem", 3, 8))
        pooled, _argmax = tf.nn.max_pool_with_argmax(stem, ksize=2, strides=2, padding="SAME", name="pool")
        block = tf.nn.relu(conv_bn(pooled, "block/conv1", 8, 8))
        block = conv_bn(block, "block/conv2", 8, 8)
        residual = tf.nn.relu(tf.add(block, pooled, name="block/add"))
        features = tf.reduce_mean(residual, axis=[1, 2], name="global_pool")
        features = tf.cond(is_training, lambda: tf.nn.dropout(features, rate=0.5), lambda: features, name="dropout")
        weights = tf1.get_variable("head/weights", [8, 10], initializer=tf1.glorot_uniform_initializer())
        bias = tf1.get_variable("head/bias", [10], initializer=tf1.random_normal_initializer(stddev=0.1))
        logits = tf.nn.bias_add(tf.matmul(features, weights), bias, name="head/logits")
        probs = tf.nn.softmax(logits, name="probs")
        loss = tf1.losses.sparse_softmax_cross_entropy(labels, logits)
        global_step = tf1.train.get_or_create_global_step()
        tf1.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=global_step, name="train_op")
        session = tf1.Session(graph=graph)
        session.run(tf1.global_variables_initializer())
        feed = np.random.default_rng(seed).standard_normal((batch, 16, 16, 3)).astype(np.float32)
        expected = session.run(probs, {images: feed})
        prefix = _save_checkpoint(graph, session, folder, global_step=1000)
        session.close()
    return ReferenceModel(path=prefix, inputs={"images:0": ("float32", (None, 16, 16, 3))}, outputs=("probs:0",),
                          feeds={"images:0": feed}, expected={"probs:0": expected}, batch=batch)


def build_dataset_fed(folder: Path, *, seed: int = 2, batch: int = 4) -> ReferenceModel:
    """A training graph fed by a tf.data iterator (IteratorGetNext), no placeholder at all."""
    import numpy as np
    import tensorflow as tf

    tf1 = tf.compat.v1
    rng = np.random.default_rng(seed)
    graph = tf.Graph()
    with graph.as_default():
        tf1.set_random_seed(seed)
        data = rng.standard_normal((32, 8, 8, 3)).astype(np.float32)
        targets = rng.integers(0, 5, 32).astype(np.int64)
        dataset = tf.data.Dataset.from_tensor_slices((data, targets)).shuffle(32).batch(batch).repeat()
        iterator = tf1.data.make_initializable_iterator(dataset)
        images, labels = iterator.get_next()
        kernel = tf1.get_variable("conv/kernel", [3, 3, 3, 6], initializer=tf1.glorot_uniform_initializer())
        hidden = tf.nn.relu(tf.nn.conv2d(images, kernel, 1, "SAME"))
        pooled = tf.reduce_mean(hidden, axis=[1, 2])
        weights = tf1.get_variable("fc/weights", [6, 5], initializer=tf1.glorot_uniform_initializer())
        logits = tf.matmul(pooled, weights, name="fc/logits")
        predictions = tf.argmax(logits, axis=1, name="predictions")
        loss = tf1.losses.sparse_softmax_cross_entropy(labels, logits)
        tf1.train.AdamOptimizer(0.01).minimize(loss, name="train_op")
        session = tf1.Session(graph=graph)
        session.run(tf1.global_variables_initializer())
        feed = rng.standard_normal((batch, 8, 8, 3)).astype(np.float32)
        got_logits, got_predictions = session.run([logits, predictions], {images: feed})
        prefix = _save_checkpoint(graph, session, folder)
        session.close()
    return ReferenceModel(path=prefix, inputs={"IteratorGetNext:0": ("float32", (None, 8, 8, 3))},
                          outputs=("fc/logits:0", "predictions:0"), feeds={"IteratorGetNext:0": feed},
                          expected={"fc/logits:0": got_logits, "predictions:0": got_predictions}, batch=batch)


def build_bert_like(folder: Path, *, seed: int = 3, batch: int = 2, length: int = 16) -> ReferenceModel:
    """Embeddings of int32 input_ids + segment_ids, one masked self-attention layer with layer norm, and two
    outputs: per-token span logits and sentence class probabilities."""
    import numpy as np
    import tensorflow as tf

    tf1 = tf.compat.v1
    vocab, width = 30, 8
    graph = tf.Graph()
    with graph.as_default():
        tf1.set_random_seed(seed)
        input_ids = tf1.placeholder(tf.int32, [None, length], name="input_ids")
        input_mask = tf1.placeholder(tf.int32, [None, length], name="input_mask")
        segment_ids = tf1.placeholder(tf.int32, [None, length], name="segment_ids")
        init = tf1.truncated_normal_initializer(stddev=0.5)
        with tf1.variable_scope("bert"):
            words = tf1.get_variable("embeddings/word", [vocab, width], initializer=init)
            segments = tf1.get_variable("embeddings/segment", [2, width], initializer=init)
            positions = tf1.get_variable("embeddings/position", [length, width], initializer=init)
            hidden = tf.gather(words, input_ids) + tf.gather(segments, segment_ids) + positions[None]
            mean, variance = tf.nn.moments(hidden, axes=[-1], keepdims=True)
            hidden = (hidden - mean) * tf.math.rsqrt(variance + 1e-6)
            query, key, value = (tf.einsum("btw,wv->btv", hidden, tf1.get_variable(f"attention/{n}", [width, width],
                                                                                   initializer=init))
                                 for n in ("query", "key", "value"))
            scores = tf.matmul(query, key, transpose_b=True) / np.sqrt(width)
            scores += (1.0 - tf.cast(input_mask[:, None, :], tf.float32)) * -10000.0
            context = tf.matmul(tf.nn.softmax(scores), value) + hidden
            pooled = tf.tanh(tf.matmul(context[:, 0], tf1.get_variable("pooler/kernel", [width, width],
                                                                       initializer=init)), name="pooler/output")
        span = tf.einsum("btw,wk->btk", context, tf1.get_variable("squad/kernel", [width, 2], initializer=init))
        span_logits = tf.identity(span, name="span_logits")
        class_probs = tf.nn.softmax(tf.matmul(pooled, tf1.get_variable("classifier/kernel", [width, 3],
                                                                       initializer=init)), name="class_probs")
        session = tf1.Session(graph=graph)
        session.run(tf1.global_variables_initializer())
        rng = np.random.default_rng(seed)
        feeds = {
            "input_ids:0": rng.integers(0, vocab, (batch, length)).astype(np.int32),
            "input_mask:0": (np.arange(length)[None] < rng.integers(4, length, (batch, 1))).astype(np.int32),
            "segment_ids:0": (np.arange(length)[None] >= length // 2).repeat(batch, 0).astype(np.int32),
        }
        got = session.run([span_logits, class_probs], feeds)
        prefix = _save_checkpoint(graph, session, folder)
        session.close()
    return ReferenceModel(path=prefix, inputs={name: ("int32", (None, length)) for name in feeds},
                          outputs=("span_logits:0", "class_probs:0"), feeds=feeds,
                          expected={"span_logits:0": got[0], "class_probs:0": got[1]}, batch=batch)


def dense_graph(seed: int) -> tuple[Any, Any]:
    """The start of the features-fed models (the SavedModel here, tests/field_models.py's): a seeded graph,
    `features:0` (None, 6) times `dense/weights` (6, 4); returns (the graph, that product)."""
    import tensorflow as tf

    tf1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        tf1.set_random_seed(seed)
        features = tf1.placeholder(tf.float32, [None, 6], name="features")
        weights = tf1.get_variable("dense/weights", [6, 4], initializer=tf1.glorot_uniform_initializer())
        return graph, tf.matmul(features, weights)


def build_saved_model(folder: Path, *, seed: int = 4, batch: int = 3) -> ReferenceModel:
    """A TF1-style SavedModel (builder, tag `serve`) of a dense net with a batch-None input."""
    import numpy as np
    import tensorflow as tf

    tf1 = tf.compat.v1
    graph, product = dense_graph(seed)
    with graph.as_default():
        features = graph.get_tensor_by_name("features:0")
        bias = tf1.get_variable("dense/bias", [4], initializer=tf1.random_normal_initializer(stddev=0.1))
        scores = tf.sigmoid(product + bias, name="scores")
        session = tf1.Session(graph=graph)
        session.run(tf1.global_variables_initializer())
        feed = np.random.default_rng(seed).standard_normal((batch, 6)).astype(np.float32)
        expected = session.run(scores, {features: feed})
        export = folder / "saved_model"
        builder = tf1.saved_model.Builder(str(export))
        signature = tf1.saved_model.predict_signature_def({"features": features}, {"scores": scores})
        builder.add_meta_graph_and_variables(session, ["serve"], signature_def_map={"serving_default": signature})
        builder.save()
        session.close()
    return ReferenceModel(path=export, inputs={"features:0": ("float32", (None, 6))}, outputs=("scores:0",),
                          feeds={"features:0": feed}, expected={"scores:0": expected}, batch=batch)


def build_keras(folder: Path, *, seed: int = 5, batch: int = 2, suffix: str = ".keras") -> ReferenceModel:
    """A small Keras CNN (conv, batch norm, pooling, dense softmax) saved as a .keras (or .h5) file."""
    import keras
    import numpy as np

    keras.utils.set_random_seed(seed)
    inputs = keras.Input((8, 8, 3), name="pixels")
    hidden = keras.layers.Conv2D(4, 3, padding="same", activation="relu")(inputs)
    hidden = keras.layers.BatchNormalization()(hidden)
    hidden = keras.layers.GlobalAveragePooling2D()(hidden)
    outputs = keras.layers.Dense(5, activation="softmax", name="probs")(hidden)
    model = keras.Model(inputs, outputs)
    feed = np.random.default_rng(seed).standard_normal((batch, 8, 8, 3)).astype(np.float32)
    expected = np.asarray(model(feed, training=False))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"model{suffix}"
    model.save(str(path))
    # The traced output takes the output layer's name.
    return ReferenceModel(path=path, inputs={"pixels:0": ("float32", (None, 8, 8, 3))}, outputs=("probs:0",),
                          feeds={"pixels:0": feed}, expected={"probs:0": expected}, batch=batch)


def build_tf1_cond(folder: Path, *, seed: int = 6, batch: int = 2) -> ReferenceModel:
    """The control flow TF 1.x wrote (Switch/Merge, not functional If): an is_training switch choosing dropout
    and batch statistics vs. moving statistics, the way tf.layers.batch_normalization(training=...) did."""
    import numpy as np
    import tensorflow as tf

    tf1 = tf.compat.v1
    tf1.disable_control_flow_v2()
    try:
        graph = tf.Graph()
        with graph.as_default():
            tf1.set_random_seed(seed)
            features = tf1.placeholder(tf.float32, [None, 6], name="features")
            is_training = tf1.placeholder_with_default(False, [], name="is_training")
            weights = tf1.get_variable("dense/weights", [6, 4], initializer=tf1.glorot_uniform_initializer())
            moving_mean = tf1.get_variable("norm/moving_mean", [4], trainable=False,
                                           initializer=tf1.random_normal_initializer(stddev=0.5))
            hidden = tf.matmul(features, weights)
            mean = tf.cond(is_training, lambda: tf.reduce_mean(hidden, axis=0), lambda: tf.identity(moving_mean),
                           name="norm/mean")
            hidden = tf.cond(is_training, lambda: tf.nn.dropout(hidden - mean, rate=0.5), lambda: hidden - mean,
                             name="dropout")
            probs = tf.nn.softmax(hidden, name="probs")
            session = tf1.Session(graph=graph)
            session.run(tf1.global_variables_initializer())
            feed = np.random.default_rng(seed).standard_normal((batch, 6)).astype(np.float32)
            expected = session.run(probs, {features: feed})
            prefix = _save_checkpoint(graph, session, folder)
            session.close()
    finally:
        tf1.enable_control_flow_v2()
    return ReferenceModel(path=prefix, inputs={"features:0": ("float32", (None, 6))}, outputs=("probs:0",),
                          feeds={"features:0": feed}, expected={"probs:0": expected}, batch=batch)


def build_tf2_saved_model(folder: Path, *, seed: int = 7, batch: int = 2) -> ReferenceModel:
    """A TF2 SavedModel (tf.saved_model.save of a tf.Module): variables captured by a serving signature that
    calls an inner tf.function."""
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(seed)

    class Scorer(tf.Module):
        def __init__(self) -> None:
            super().__init__()
            self.kernel = tf.Variable(rng.standard_normal((6, 3)).astype(np.float32), name="kernel")
            self.bias = tf.Variable(rng.standard_normal(3).astype(np.float32), name="bias")

        @tf.function
        def logits(self, x: Any) -> Any:
            return tf.matmul(x, self.kernel) + self.bias

        @tf.function(input_signature=[tf.TensorSpec([None, 6], tf.float32, name="x")])
        def serve(self, x: Any) -> Any:
            return {"probs": tf.nn.softmax(self.logits(x))}

    module = Scorer()
    feed = rng.standard_normal((batch, 6)).astype(np.float32)
    expected = module.serve(tf.constant(feed))["probs"].numpy()
    export = folder / "tf2_saved_model"
    tf.saved_model.save(module, str(export), signatures=module.serve)
    return ReferenceModel(path=export, inputs={"x:0": ("float32", (None, 6))}, outputs=("probs:0",),
                          feeds={"x:0": feed}, expected={"probs:0": expected}, batch=batch)
