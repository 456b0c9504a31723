"""A training graph whose logits only the loss and the metrics read (the ModelZoo shape: a label placeholder with
no shape, an in_top_k or argmax == label accuracy, a mean loss, an optimizer): inspect offers the logits first,
never the loss, the accuracy or the loss's shape plumbing, and tells the label placeholder for a label; freeze
takes the logits without the labels."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from ckpt2pb.inspection import inspect_model
from infer.freeze import FreezeOptions, freeze_model
from tests.cli import run_cli


@dataclass(frozen=True)
class TrainingGraph:
    prefix: Path
    images: str
    labels: str
    logits: str
    probabilities: str | None


@dataclass(frozen=True)
class Variant:
    """How one training graph is written: its loss, its accuracy, its names."""

    one_hot: bool  # softmax cross-entropy on one-hot labels, else the sparse one on class ids
    in_top_k: bool  # tf.nn.in_top_k accuracy, else argmax == label
    fp16_accuracy: bool
    softmax_beside: bool  # a softmax of the logits outside the loss (read by nothing, or by the accuracy)
    scope: str  # the head's name scope
    feed_names: tuple[str, str]  # images, labels


VARIANTS = {
    "sparse_in_top_k_fp16": Variant(False, True, True, False, "fc_out", ("batch_x", "gt")),
    "one_hot_argmax": Variant(True, False, False, False, "classifier/dense", ("pixels", "y_onehot")),
    "sparse_argmax_softmax": Variant(False, False, False, True, "head", ("inp", "cls")),
    "one_hot_in_top_k_softmax_fp16": Variant(True, True, True, True, "top", ("data", "truth")),
}


def _build(folder: Path, variant: Variant) -> TrainingGraph:
    import tensorflow as tf

    tf1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        images = tf1.placeholder(tf.float32, [None, 6, 6, 3], name=variant.feed_names[0])
        labels = tf1.placeholder(tf.float32 if variant.one_hot else tf.int32, name=variant.feed_names[1])  # no shape
        kernel = tf1.get_variable("conv_k", [3, 3, 3, 4], initializer=tf1.random_normal_initializer(seed=1))
        features = tf.reduce_mean(tf.nn.relu(tf.nn.conv2d(images, kernel, 1, "SAME")), [1, 2])
        with tf1.variable_scope(variant.scope):
            weights = tf1.get_variable("w", [4, 5], initializer=tf1.random_normal_initializer(seed=2))
            logits = tf.nn.bias_add(tf.matmul(features, weights), tf1.get_variable("b", [5]))
        probabilities = tf.nn.softmax(logits, name="p") if variant.softmax_beside else None
        classes = labels if not variant.one_hot else tf.argmax(labels, 1, output_type=tf.int32)
        if variant.one_hot:
            per_example = tf.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits, name="xe")
        else:
            per_example = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits, name="xe")
        objective = tf.reduce_mean(per_example, name="objective")
        scores = probabilities if probabilities is not None else logits
        hits = (tf1.nn.in_top_k(scores, classes, 1) if variant.in_top_k
                else tf.equal(tf.argmax(scores, 1, output_type=tf.int32), classes))
        tf.reduce_mean(tf.cast(hits, tf.float16 if variant.fp16_accuracy else tf.float32), name="hit_rate")
        tf1.train.GradientDescentOptimizer(0.1).minimize(objective)
        with tf1.Session() as session:
            session.run(tf1.global_variables_initializer())
            prefix = folder / "model.ckpt"
            tf1.train.Saver().save(session, str(prefix))
    return TrainingGraph(prefix=prefix, images=images.name, labels=labels.name, logits=logits.name,
                         probabilities=None if probabilities is None else probabilities.name)


@pytest.fixture(scope="module", params=sorted(VARIANTS))
def training_graph(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> TrainingGraph:
    return _build(tmp_path_factory.mktemp(request.param), VARIANTS[request.param])


@pytest.mark.slow
def test_the_logits_rank_first_and_no_metric_or_plumbing_is_offered(training_graph: TrainingGraph) -> None:
    report = inspect_model(training_graph.prefix)
    ranked = [c.tensor for c in report.candidates]
    wanted = [t for t in (training_graph.probabilities, training_graph.logits) if t]
    assert ranked[:len(wanted)] == wanted, ranked
    assert all(c.read_by_loss for c in report.candidates[:len(wanted)])
    assert not [c.tensor for c in report.candidates if c.shape == ()], ranked  # the loss, the accuracy
    assert not [c.tensor for c in report.candidates if c.op in ("Shape", "Size", "Rank", "ShapeN")], ranked


@pytest.mark.slow
def test_the_label_placeholder_is_a_label(capsys: pytest.CaptureFixture[str], training_graph: TrainingGraph) -> None:
    report = inspect_model(training_graph.prefix)
    by_tensor = {p.tensor: p for p in report.placeholders}
    assert by_tensor[training_graph.labels].is_label and not by_tensor[training_graph.images].is_label
    document = json.loads(run_cli(capsys, "inspect", training_graph.prefix, "--json").out)
    assert {i["tensor"]: i["label"] for i in document["inputs"]} == {training_graph.images: False,
                                                                      training_graph.labels: True}
    assert document["output_candidates"][0]["read_by_loss"] is True
    text = run_cli(capsys, "inspect", training_graph.prefix).out
    label_row = next(line for line in text.splitlines() if line.startswith(training_graph.labels))
    assert "a label" in label_row and "--set" not in label_row


@pytest.mark.slow
def test_freeze_takes_the_logits_without_the_labels(training_graph: TrainingGraph, tmp_path: Path) -> None:
    report = freeze_model(training_graph.prefix, tmp_path / "frozen",
                          FreezeOptions(outputs=(training_graph.logits,), batch=2))
    contract = report.contract
    assert [s.name for s in contract.inputs] == [training_graph.images]
    assert [(s.name, s.shape) for s in contract.outputs] == [(training_graph.logits, (2, 5))]


@pytest.mark.slow
def test_freeze_of_the_loss_says_the_label_is_no_setting(training_graph: TrainingGraph, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """The loss reads the shape-less labels: freeze names them a label and points at the model's answer; no --set."""
    outcome = run_cli(capsys, "freeze", training_graph.prefix, "-o", tmp_path / "frozen", "--outputs",
                      "objective:0", "--batch", "2")
    assert outcome.code == 2
    assert outcome.error_line == (f"error: input {training_graph.labels}: a label (only the loss and metrics read it, "
                                  "and the graph does not know its rank), read by the outputs objective:0: those are "
                                  "training's, not the model's answer")
    assert "--set" not in outcome.err and "infer inspect MODEL lists it first" in outcome.err
    assert not (tmp_path / "frozen").exists()


def test_a_learning_rate_placeholder_is_no_label(tmp_path: Path) -> None:
    """A feed only the optimizer reads is neither the model's nor a label: nothing marks it one."""
    import tensorflow as tf

    tf1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [None, 3], name="x")
        target = tf1.placeholder(tf.float32, [None, 2], name="target")
        rate = tf1.placeholder(tf.float32, name="rate")
        prediction = tf.matmul(x, tf1.get_variable("w", [3, 2]), name="regression")
        loss = tf.reduce_mean(tf.math.squared_difference(prediction, target))
        tf1.train.GradientDescentOptimizer(rate).minimize(loss)
    pb = tmp_path / "regression.pb"
    pb.write_bytes(graph.as_graph_def().SerializeToString())
    report = inspect_model(pb)
    assert {p.tensor: p.is_label for p in report.placeholders} == {"x:0": False, "target:0": True, "rate:0": False}
    assert report.candidates[0].tensor == "regression:0" and report.candidates[0].read_by_loss


def test_a_tf_data_training_graph_takes_the_iterator_s_labels(tmp_path: Path) -> None:
    """Images and labels from one iterator, each output by its index: the labels output is the label, the logits
    the loss reads straight from the iterator's labels the output."""
    import tensorflow as tf

    tf1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        dataset = tf.data.Dataset.from_tensor_slices((tf.zeros([8, 5]), tf.zeros([8], tf.int32))).batch(2)
        features, classes = tf1.data.make_one_shot_iterator(dataset).get_next()
        scores = tf.matmul(features, tf1.get_variable("w", [5, 3]), name="scores")
        cost = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=classes, logits=scores))
        tf.reduce_mean(tf.cast(tf1.nn.in_top_k(scores, classes, 1), tf.float32))
        tf1.train.AdamOptimizer().minimize(cost)
    pb = tmp_path / "dataset_training.pb"
    pb.write_bytes(graph.as_graph_def().SerializeToString())
    report = inspect_model(pb)
    assert {p.tensor: p.is_label for p in report.placeholders} == {features.name: False, classes.name: True}
    assert report.candidates[0].tensor == "scores:0" and report.candidates[0].read_by_loss
    assert not [c.tensor for c in report.candidates if c.shape == () or c.op in ("Shape", "Size", "Rank")]


@pytest.mark.slow
def test_tf_losses_and_tf_metrics_leave_the_logits_first(tmp_path: Path) -> None:
    """tf.compat.v1.losses on one-hot labels made in the graph, tf.compat.v1.metrics.accuracy (its value read from
    variables the labels update, so no data path from the labels reaches it): no scalar is offered."""
    import tensorflow as tf

    tf1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [None, 4], name="feats")
        classes = tf1.placeholder(tf.int64, [None], name="y")
        logits = tf.matmul(x, tf1.get_variable("w", [4, 3]), name="dense_out")
        cost = tf1.losses.softmax_cross_entropy(tf.one_hot(classes, 3), logits)
        tf1.metrics.accuracy(classes, tf.argmax(logits, 1))
        tf1.train.AdamOptimizer().minimize(cost)
    pb = tmp_path / "tf_losses.pb"
    pb.write_bytes(graph.as_graph_def().SerializeToString())
    report = inspect_model(pb)
    assert {p.tensor: p.is_label for p in report.placeholders} == {"feats:0": False, "y:0": True}
    assert report.candidates[0].tensor == "dense_out:0" and report.candidates[0].read_by_loss
    assert not [c.tensor for c in report.candidates if c.shape == ()]


@pytest.mark.slow
def test_an_accuracy_over_labels_of_unknown_rank_is_no_candidate(tmp_path: Path) -> None:
    """reduce_mean with no axis over a tensor of unknown rank (labels with no shape at all) has no static shape,
    yet is a scalar: an accuracy written by hand is offered no more than one from tf.metrics."""
    import tensorflow as tf

    tf1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        feats = tf1.placeholder(tf.float32, [None, 6], name="feats")
        onehot = tf1.placeholder(tf.float32, name="onehot")
        scores = tf.matmul(feats, tf1.get_variable("w", [6, 3]), name="scores")
        loss = tf1.losses.softmax_cross_entropy(onehot, scores)
        tf.reduce_mean(tf.cast(tf.equal(tf.argmax(scores, 1), tf.argmax(onehot, 1)), tf.float32), name="hits")
        tf1.train.GradientDescentOptimizer(0.1).minimize(loss)
        with tf1.Session() as session:
            session.run(tf1.global_variables_initializer())
            prefix = tf1.train.Saver().save(session, str(tmp_path / "model.ckpt"))
    names = [c.tensor for c in inspect_model(prefix).candidates]
    assert names[0] == "scores:0" and "hits:0" not in names
