"""Models as they are found in the field, each built in the test to reproduce one situation freeze met there:
a checkpoint saved under a prefix ending in '/', a shape-less bool switch steering TF2's functional tf.cond,
dropout whose switch is off, a softmax read only by metric and loss ops, a TF2 SavedModel TensorFlow cannot
revive. Raw tf.nn ops and get_variable, so no Keras is needed; seeded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.models import ReferenceModel, dense_graph


def _small_head(images: Any, classes: int = 5) -> Any:
    """conv -> relu -> global mean -> dense logits, variables created here."""
    import tensorflow as tf

    tf1 = tf.compat.v1
    kernel = tf1.get_variable("conv/kernel", [3, 3, 3, 4], initializer=tf1.glorot_uniform_initializer())
    hidden = tf.nn.relu(tf.nn.conv2d(images, kernel, 1, "SAME"))
    pooled = tf.reduce_mean(hidden, axis=[1, 2])
    weights = tf1.get_variable("head/weights", [4, classes], initializer=tf1.glorot_uniform_initializer())
    return tf.matmul(pooled, weights, name="head/logits")


def _feed(seed: int, batch: int) -> Any:
    import numpy as np

    return np.random.default_rng(seed).standard_normal((batch, 8, 8, 3)).astype(np.float32)


def _features_model(graph: Any, folder: Path, outputs: tuple[str, ...], *, seed: int, batch: int,
                    fixed: dict[str, float] | None = None) -> ReferenceModel:
    """A graph fed by `features:0` (None, 6): its variables initialised, `outputs` computed on a seeded batch
    (with the `fixed` placeholders fed as given), the checkpoint saved; the reference for the tests."""
    import numpy as np
    import tensorflow as tf

    from tests.models import _save_checkpoint

    with graph.as_default():
        session = tf.compat.v1.Session(graph=graph)
        session.run(tf.compat.v1.global_variables_initializer())
        feed = np.random.default_rng(seed).standard_normal((batch, 6)).astype(np.float32)
        got = session.run(list(outputs), {"features:0": feed, **{f"{k}:0": v for k, v in (fixed or {}).items()}})
        prefix = _save_checkpoint(graph, session, folder)
        session.close()
    return ReferenceModel(path=prefix, inputs={"features:0": ("float32", (None, 6))}, outputs=outputs,
                          feeds={"features:0": feed}, expected=dict(zip(outputs, got, strict=True)), batch=batch)


def build_slash_prefix(folder: Path, *, seed: int = 10, batch: int = 2) -> ReferenceModel:
    """`saver.save(session, "run_dir/")`: files `.index`, `.meta`, `.data-00000-of-00001` in run_dir, and a
    `checkpoint` file naming the prefix by another machine's absolute path, ending in '/'."""
    import tensorflow as tf

    tf1 = tf.compat.v1
    run_dir = folder / "run_dir"
    graph = tf.Graph()
    with graph.as_default():
        tf1.set_random_seed(seed)
        images = tf1.placeholder(tf.float32, [None, 8, 8, 3], name="images")
        probs = tf.nn.softmax(_small_head(images), name="probs")
        saver = tf1.train.Saver()
        with tf1.Session(graph=graph) as session:
            session.run(tf1.global_variables_initializer())
            feed = _feed(seed, batch)
            expected = session.run(probs, {images: feed})
            saver.save(session, str(run_dir) + "/")
    (run_dir / "checkpoint").write_text('model_checkpoint_path: "/home/trainer/experiments/run_dir/"\n'
                                        'all_model_checkpoint_paths: "/home/trainer/experiments/run_dir/"\n')
    return ReferenceModel(path=run_dir, inputs={"images:0": ("float32", (None, 8, 8, 3))}, outputs=("probs:0",),
                          feeds={"images:0": feed}, expected={"probs:0": expected}, batch=batch)


def build_switch_cond(folder: Path, *, seed: int = 11, batch: int = 2) -> ReferenceModel:
    """`is_training = tf.compat.v1.placeholder(tf.bool)` (no shape) steering TF2's functional tf.cond around a
    fused batch norm: the training branch uses batch statistics with `exponential_avg_factor` and dropout, and an
    optimizer's gradients make the If carry Optional intermediates; labels and a loss beside."""
    import tensorflow as tf

    tf1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        tf1.set_random_seed(seed)
        images = tf1.placeholder(tf.float32, [None, 8, 8, 3], name="images")
        labels = tf1.placeholder(tf.int32, [None], name="labels")
        is_training = tf1.placeholder(tf.bool, name="is_training")
        kernel = tf1.get_variable("conv/kernel", [3, 3, 3, 4], initializer=tf1.glorot_uniform_initializer())
        conv = tf.nn.conv2d(images, kernel, 1, "SAME")
        gamma = tf1.get_variable("bn/gamma", [4], initializer=tf1.random_uniform_initializer(0.5, 1.5))
        beta = tf1.get_variable("bn/beta", [4], initializer=tf1.random_normal_initializer(stddev=0.1))
        mean = tf1.get_variable("bn/moving_mean", [4], trainable=False,
                                initializer=tf1.random_normal_initializer(stddev=0.1))
        variance = tf1.get_variable("bn/moving_variance", [4], trainable=False,
                                    initializer=tf1.random_uniform_initializer(0.5, 1.5))

        def training() -> Any:
            normed, _, _ = tf1.nn.fused_batch_norm(conv, gamma, beta, mean, variance, is_training=True,
                                                   exponential_avg_factor=0.9)
            return tf.nn.dropout(normed, rate=0.5)

        def inference() -> Any:
            normed, _, _ = tf1.nn.fused_batch_norm(conv, gamma, beta, mean, variance, is_training=False)
            return normed

        normed = tf.cond(is_training, training, inference, name="bn/cond")
        pooled = tf.reduce_mean(tf.nn.relu(normed), axis=[1, 2])
        weights = tf1.get_variable("head/weights", [4, 5], initializer=tf1.glorot_uniform_initializer())
        logits = tf.matmul(pooled, weights, name="head/logits")
        probs = tf.nn.softmax(logits, name="probs")
        loss = tf1.losses.sparse_softmax_cross_entropy(labels, logits)
        tf1.train.AdamOptimizer(0.01).minimize(loss, name="train_op")
        session = tf1.Session(graph=graph)
        session.run(tf1.global_variables_initializer())
        feed = _feed(seed, batch)
        expected = session.run(probs, {images: feed, is_training: False})
        from tests.models import _save_checkpoint

        prefix = _save_checkpoint(graph, session, folder)
        session.close()
    return ReferenceModel(path=prefix, inputs={"images:0": ("float32", (None, 8, 8, 3))}, outputs=("probs:0",),
                          feeds={"images:0": feed}, expected={"probs:0": expected}, batch=batch)


def build_dropout_switches(folder: Path, *, seed: int = 12, batch: int = 2) -> ReferenceModel:
    """Dropout four ways, each with its switch off at inference: `tf.compat.v1.nn.dropout(keep_prob=kp)` with kp
    a placeholder_with_default(1.0), the same with a plain `keep_prob` placeholder (fixed by --set keep_prob=1.0),
    TF 1.x's own formula `x / kp * floor(kp + uniform)`, and `tf.nn.dropout(rate=0.0)`; one output each."""
    import tensorflow as tf

    tf1 = tf.compat.v1
    graph, product = dense_graph(seed)
    with graph.as_default():
        default_kp = tf1.placeholder_with_default(1.0, [], name="default_keep_prob")
        keep_prob = tf1.placeholder(tf.float32, [], name="keep_prob")
        hidden = tf.nn.relu(product)
        tf1.identity(tf1.nn.dropout(hidden, keep_prob=default_kp), name="by_default")
        tf1.identity(tf1.nn.dropout(hidden, keep_prob=keep_prob), name="by_set")
        mask = tf.floor(keep_prob + tf1.random_uniform(tf.shape(hidden)))
        tf1.identity(hidden / keep_prob * mask, name="tf1_formula")
        tf1.identity(tf.nn.dropout(hidden, rate=0.0), name="rate_zero")
    return _features_model(graph, folder, ("by_default:0", "by_set:0", "tf1_formula:0", "rate_zero:0"), seed=seed,
                           batch=batch, fixed={"keep_prob": 1.0})


def build_noisy(folder: Path, *, seed: int = 13, batch: int = 2) -> ReferenceModel:
    """Randomness that genuinely stays at inference: noise far below any threshold, added to the output."""
    import tensorflow as tf

    tf1 = tf.compat.v1
    graph, scores = dense_graph(seed)
    with graph.as_default():
        tf.add(scores, 1e-9 * tf1.random_normal(tf.shape(scores)), name="noisy")
    return _features_model(graph, folder, ("noisy:0",), seed=seed, batch=batch)


def build_metric_read_softmax(folder: Path, *, seed: int = 14, batch: int = 2,
                              from_dataset: bool = False) -> ReferenceModel:
    """A softmax read only by an accuracy (ArgMax -> Equal -> Cast -> Mean, the labels' one-hot argmax on the
    other side), beside a loss on the logits and an optimizer: nothing leaves probs unconsumed, and the
    unconsumed tensors are the metrics. `from_dataset`: images and labels are the two outputs of one tf.data
    iterator (`IteratorGetNext:0` and `:1`) instead of placeholders."""
    import numpy as np
    import tensorflow as tf

    tf1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        tf1.set_random_seed(seed)
        if from_dataset:
            data = tf1.data.Dataset.from_tensor_slices((_feed(seed, 4), np.arange(4) % 5)).batch(batch).repeat()
            images, labels = tf1.data.make_one_shot_iterator(data).get_next()
        else:
            images = tf1.placeholder(tf.float32, [None, 8, 8, 3], name="images")
            labels = tf1.placeholder(tf.int64, [None], name="labels")
        logits = _small_head(images)
        probs = tf.nn.softmax(logits, name="probs")
        # The TF1 tutorials' accuracy: the argmax of the prediction against the argmax of one-hot labels.
        correct = tf.equal(tf.argmax(probs, axis=1), tf.argmax(tf.one_hot(labels, 5), axis=1))
        tf.reduce_mean(tf.cast(correct, tf.float32), name="accuracy")
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits),
                              name="loss")
        tf1.train.GradientDescentOptimizer(0.1).minimize(loss, name="train_op")
        session = tf1.Session(graph=graph)
        session.run(tf1.global_variables_initializer())
        feed = _feed(seed, batch)
        expected = session.run(probs, {images: feed})  # an iterator's output can be fed like a placeholder
        from tests.models import _save_checkpoint

        prefix = _save_checkpoint(graph, session, folder)
        session.close()
    return ReferenceModel(path=prefix, inputs={images.name: ("float32", (None, 8, 8, 3))}, outputs=("probs:0",),
                          feeds={images.name: feed}, expected={"probs:0": expected}, batch=batch)


def build_unrevivable_saved_model(folder: Path, *, seed: int = 15, batch: int = 2) -> ReferenceModel:
    """A TF2 SavedModel whose object graph TensorFlow 2.16+ cannot revive without the library that wrote it, as
    Keras 2 (tf_keras) models saved by TF <= 2.15 are: the optimizer is saved as an object holding slot
    variables, which the loader restores through `optimizer.add_slot`, a method the generic object it revives
    lacks (`'_UserObject' object has no attribute 'add_slot'`). Where tf_keras is importable, it revives the
    optimizer, and this model then fails one step later (its checkpoint does not list the slot's value), so
    freeze takes the fallback either way. The serving signature has three named outputs, as published
    multi-head models do."""
    import numpy as np
    import tensorflow as tf
    from tensorflow.core.protobuf import saved_model_pb2, trackable_object_graph_pb2

    rng = np.random.default_rng(seed)

    class Transcriber(tf.Module):
        def __init__(self) -> None:
            super().__init__()
            self.kernel = tf.Variable(rng.standard_normal((6, 4)).astype(np.float32), name="kernel")
            self.optimizer = tf.Module()
            self.optimizer.slot = tf.Variable(np.zeros((6, 4), np.float32), name="kernel_m")

        @tf.function(input_signature=[tf.TensorSpec([None, 6], tf.float32, name="audio")])
        def serve(self, audio: Any) -> Any:
            hidden = tf.matmul(audio, self.kernel)
            return {"contour": tf.sigmoid(hidden), "note": tf.nn.softmax(hidden), "onset": tf.tanh(hidden)}

    module = Transcriber()
    feed = rng.standard_normal((batch, 6)).astype(np.float32)
    got = module.serve(tf.constant(feed))
    export = folder / "saved_model"
    tf.saved_model.save(module, str(export), signatures=module.serve)
    saved = saved_model_pb2.SavedModel.FromString((export / "saved_model.pb").read_bytes())
    nodes = saved.meta_graphs[0].object_graph_def.nodes

    def child(node: Any, name: str) -> int:
        return next(ref.node_id for ref in node.children if ref.local_name == name)

    kernel, optimizer = child(nodes[0], "kernel"), child(nodes[0], "optimizer")
    nodes[optimizer].user_object.identifier = "optimizer"  # what Keras 2 writes; the loader asks Keras to revive it
    slot = child(nodes[optimizer], "slot")
    # A slot is reached through its optimizer's slot_variables only, as Keras 2 saved it, not as a child.
    kept = [ref for ref in nodes[optimizer].children if ref.node_id != slot]
    del nodes[optimizer].children[:]
    nodes[optimizer].children.extend(kept)
    nodes[optimizer].slot_variables.append(trackable_object_graph_pb2.TrackableObjectGraph.TrackableObject
                                           .SlotVariableReference(original_variable_node_id=kernel, slot_name="m",
                                                                  slot_variable_node_id=slot))
    (export / "saved_model.pb").write_bytes(saved.SerializeToString())
    names = ("contour", "note", "onset")
    return ReferenceModel(path=export, inputs={"audio": ("float32", (None, 6))}, outputs=names,
                          feeds={"audio": feed}, expected={name: got[name].numpy() for name in names}, batch=batch)


def build_data_cond(folder: Path, *, seed: int = 17, batch: int = 2) -> ReferenceModel:
    """A tf.cond on the data itself (the sign of the features' sum): no switch can fold it, so TF2's functional
    If stays in the frozen graph, which ATC's TF 1.15 parser does not know; one branch holds a batch norm."""
    import tensorflow as tf

    tf1 = tf.compat.v1
    graph, hidden = dense_graph(seed)
    with graph.as_default():
        features = graph.get_tensor_by_name("features:0")
        gamma = tf1.get_variable("bn/gamma", [4], initializer=tf1.random_uniform_initializer(0.5, 1.5))
        beta = tf1.get_variable("bn/beta", [4], initializer=tf1.random_normal_initializer(stddev=0.1))

        def normed() -> Any:  # TF 2.x writes FusedBatchNormV3 with exponential_avg_factor, inside the branch
            image = tf.reshape(hidden, [-1, 1, 1, 4])
            out, _, _ = tf1.nn.fused_batch_norm(image, gamma, beta, tf.zeros([4]), tf.ones([4]), is_training=False)
            return tf.nn.relu(tf.reshape(out, [-1, 4]))

        chosen = tf.cond(tf.reduce_sum(features) > 0, normed, lambda: tf.tanh(hidden), name="branch")
        tf.identity(chosen, name="scores")
    return _features_model(graph, folder, ("scores:0",), seed=seed, batch=batch)
