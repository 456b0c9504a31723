"""Losses with no op of their own (a huber loss, a mean absolute error by hand, a sigmoid cross-entropy, a loss
written by hand) and metrics that cast their argmax or threshold (Keras' sparse_categorical_accuracy, a multi-label
accuracy): inspect reads the model's answer and the labels from the data flow, not from one more op pattern; freeze's
hint never proposes a loss or a metric."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ckpt2pb.inspection import inspect_model
from tests.cli import run_cli


def _checkpoint(folder: Path, build: Callable[[Any], Any]) -> Path:
    """Builds `build(tf)` (which returns the loss) with an optimizer, and saves a checkpoint of it."""
    import tensorflow as tf

    tf1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        tf1.set_random_seed(3)
        loss = build(tf)
        tf1.train.AdamOptimizer(0.01).minimize(loss)
        with tf1.Session(graph=graph) as session:
            session.run(tf1.global_variables_initializer())
            return Path(tf1.train.Saver().save(session, str(folder / "model.ckpt")))


def _dense(tf: Any, x: Any, units: int, name: str) -> Any:
    tf1 = tf.compat.v1
    weights = tf1.get_variable(f"{name}/kernel", [int(x.shape[-1]), units],
                               initializer=tf1.glorot_uniform_initializer(seed=4))
    return tf.nn.bias_add(tf.matmul(x, weights), tf1.get_variable(f"{name}/bias", [units]), name=name)


def _features(tf: Any) -> Any:
    x = tf.compat.v1.placeholder(tf.float32, [None, 6], name="features")
    return tf.nn.relu(_dense(tf, x, 8, "hidden"))


def huber(tf: Any) -> Any:
    prediction = _dense(tf, _features(tf), 1, "prediction")
    target = tf.compat.v1.placeholder(tf.float32, [None, 1], name="target")
    return tf.compat.v1.losses.huber_loss(target, prediction)


def mae(tf: Any) -> Any:
    prediction = _dense(tf, _features(tf), 1, "prediction")
    target = tf.compat.v1.placeholder(tf.float32, name="target")  # no shape, as tutorials write it
    tf.reduce_mean(tf.square(prediction - target), name="mse")  # a metric beside the loss
    return tf.reduce_mean(tf.abs(prediction - target), name="mae")


def multi_label(tf: Any) -> Any:
    logits = _dense(tf, _features(tf), 4, "tags")
    target = tf.compat.v1.placeholder(tf.float32, [None, 4], name="target")
    flags = tf.cast(tf.sigmoid(logits, name="tag_probs") > 0.5, tf.float32)
    tf.reduce_mean(tf.cast(tf.equal(flags, target), tf.float32), name="accuracy")
    return tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=target, logits=logits))


def keras_accuracy(tf: Any) -> Any:
    """Keras 2's sparse_categorical_accuracy, op for op: labels [N, 1] squeezed, the argmax cast to their dtype."""
    probs = tf.nn.softmax(_dense(tf, _features(tf), 3, "scores"), name="probs")
    target = tf.compat.v1.placeholder(tf.float32, [None, 1], name="target")
    with tf.name_scope("sparse_categorical_accuracy"):
        hits = tf.cast(tf.equal(tf.squeeze(target, -1), tf.cast(tf.argmax(probs, -1), tf.float32)), tf.float32)
    tf.reduce_mean(hits, name="accuracy")
    classes = tf.cast(tf.squeeze(target, -1), tf.int32)
    return tf.reduce_mean(-tf.math.log(tf.gather(probs, classes, batch_dims=1) + 1e-7))


def hand_written(tf: Any) -> Any:
    """A cross-entropy written out on one-hot labels, with an epsilon inside the log."""
    probs = tf.nn.softmax(_dense(tf, _features(tf), 3, "scores"), name="probs")
    target = tf.compat.v1.placeholder(tf.float32, [None, 3], name="onehot")
    return -tf.reduce_mean(tf.reduce_sum(target * tf.math.log(probs + 1e-7), axis=1), name="xent")


def attention(tf: Any) -> Any:
    """An attention block whose mask is added to the scores: the mask meets weighted data as a label would, but
    flows on into the layers; it is a model input, the class ids the labels."""
    tf1 = tf.compat.v1
    ids = tf1.placeholder(tf.int32, [None, 5], name="ids")
    mask = tf1.placeholder(tf.float32, [None, 5], name="mask")
    embedded = tf.gather(tf1.get_variable("embedding", [10, 4]), ids)
    scores = tf.matmul(embedded, embedded, transpose_b=True) + (1.0 - mask[:, None, :]) * -10000.0
    attended = tf.matmul(tf.nn.softmax(scores), embedded)
    logits = _dense(tf, tf.reduce_mean(attended, axis=1), 3, "logits")
    classes = tf1.placeholder(tf.int32, [None], name="classes")
    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=classes, logits=logits))


# model -> (the answers the losses and metrics read, first first; the labels; the other feeds)
CASES: dict[str, tuple[Callable[[Any], Any], tuple[str, ...], set[str], set[str]]] = {
    "huber": (huber, ("prediction:0",), {"target:0"}, {"features:0"}),
    "mae": (mae, ("prediction:0",), {"target:0"}, {"features:0"}),
    "multi_label": (multi_label, ("tag_probs:0", "tags:0"), {"target:0"}, {"features:0"}),
    "keras_accuracy": (keras_accuracy, ("probs:0",), {"target:0"}, {"features:0"}),
    "hand_written": (hand_written, ("probs:0",), {"onehot:0"}, {"features:0"}),
    "attention": (attention, ("logits:0",), {"classes:0"}, {"ids:0", "mask:0"}),
}


@pytest.fixture(scope="module", params=sorted(CASES))
def case(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
         ) -> tuple[Path, tuple[str, ...], set[str], set[str]]:
    build, answers, labels, others = CASES[request.param]
    return _checkpoint(tmp_path_factory.mktemp(request.param), build), answers, labels, others


def test_the_answer_comes_first_and_the_labels_are_labels(case: tuple[Path, tuple[str, ...], set[str], set[str]]
                                                          ) -> None:
    prefix, answers, labels, others = case
    report = inspect_model(prefix)
    ranked = [c.tensor for c in report.candidates]
    assert ranked[:len(answers)] == list(answers), ranked
    assert all(c.read_by_loss for c in report.candidates[:len(answers)])
    assert not [c for c in report.candidates if c.shape == ()], ranked  # no loss, no metric
    assert not [c for c in report.candidates if c.op == "Cast" and c.read_by_loss], ranked  # a cast flag or class id
    assert {p.tensor for p in report.placeholders if p.is_label} == labels
    assert {p.tensor for p in report.placeholders if not p.is_label} == others


def test_freeze_s_hint_proposes_the_answer_never_a_loss_or_metric(
        case: tuple[Path, tuple[str, ...], set[str], set[str]], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    prefix, answers, _, _ = case
    outcome = run_cli(capsys, "freeze", str(prefix), "-o", str(tmp_path / "model"))
    assert outcome.code == 2
    hint = next(line for line in outcome.err.splitlines() if line.startswith("hint:"))
    assert hint.startswith(f"hint: likely outputs: {answers[0]}"), hint
    offered = {c.tensor: c for c in inspect_model(prefix).candidates}
    for name in hint.removeprefix("hint: likely outputs: ").split(", "):  # per sample, no flag or id cast to float
        assert offered[name].shape != () and offered[name].op != "Cast", hint


def test_the_losses_are_what_the_gradients_start_from(tmp_path: Path) -> None:
    from ckpt2pb.source import load_source
    from ckpt2pb.training_heads import losses

    assert losses(load_source(_checkpoint(tmp_path, mae)).graph_def) == ("mae:0",)


def test_a_loss_with_no_labels_is_no_candidate(tmp_path: Path) -> None:
    """An autoencoder's loss reads no label: it is still what the gradients start from, never an output offered."""
    def reconstruction(tf: Any) -> Any:
        features = tf.compat.v1.placeholder(tf.float32, [None, 6], name="features")
        decoded = _dense(tf, tf.nn.relu(_dense(tf, features, 3, "code")), 6, "decoded")
        return tf.identity(tf.reduce_mean(tf.square(decoded - features)), name="reconstruction_error")

    report = inspect_model(_checkpoint(tmp_path, reconstruction))
    assert not {"reconstruction_error:0", "Mean:0"} & {c.tensor for c in report.candidates}
