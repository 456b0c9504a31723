"""inspect finds the inputs and puts the true outputs among its first three candidates, for every model kind."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ckpt2pb.inspection import inspect_model
from infer.contract import ModelContract
from tests.cli import run_cli
from tests.models import ReferenceModel


@pytest.mark.slow
@pytest.mark.parametrize("fixture", ["resnet_model", "dataset_model", "bert_model", "saved_model", "keras_model",
                                     "keras_h5_model", "tf1_cond_model", "tf2_saved_model"])
def test_true_outputs_rank_in_the_first_three(request: pytest.FixtureRequest, fixture: str) -> None:
    model: ReferenceModel = request.getfixturevalue(fixture)
    report = inspect_model(model.path)
    first_three = [c.tensor for c in report.candidates[:3]]
    # A consumed tensor cannot be a candidate: the dataset model's logits feed its argmax, which is.
    wanted = [name for name in model.outputs if name != "fc/logits:0"]
    assert set(wanted) <= set(first_three), first_three
    inputs = {p.tensor: (p.dtype, p.shape) for p in report.placeholders if not p.has_default}
    for name, (dtype_name, shape) in model.inputs.items():
        assert inputs[name] == (dtype_name, shape)


def test_resnet_report(resnet_model: ReferenceModel) -> None:
    report = inspect_model(resnet_model.path)
    by_name = {p.tensor: p for p in report.placeholders}
    assert set(by_name) == {"images:0", "labels:0", "is_training:0"}  # the saver's own placeholders are hidden
    assert by_name["is_training:0"].has_default and by_name["is_training:0"].dtype == "bool"
    assert by_name["images:0"].dynamic_dims == (0,)
    assert report.candidates[0].tensor == "probs:0" and report.candidates[0].op == "Softmax"
    assert not any(c.tensor.startswith(("save/", "gradients/", "train_op")) for c in report.candidates)
    histogram = dict(report.op_histogram)
    assert histogram["FusedBatchNormV3"] == 3 and histogram["MaxPoolWithArgmax"] == 1
    # 18 variables: 3 x (kernel, gamma, beta, mean, variance), head weights and bias, global_step.
    assert report.variables == 18
    kernels, norms, head, step = 3 * 3 * 3 * 8 + 2 * (3 * 3 * 8 * 8), 3 * 4 * 8, 8 * 10 + 10, 1
    assert report.parameters == kernels + norms + head + step
    assert report.tf_version and report.kind == "checkpoint"


def test_dataset_model_lists_the_iterator_outputs(dataset_model: ReferenceModel) -> None:
    report = inspect_model(dataset_model.path)
    assert [(p.tensor, p.from_iterator) for p in report.placeholders] == [("IteratorGetNext:0", True),
                                                                         ("IteratorGetNext:1", True)]


def test_frozen_pb_counts_constants(frozen_small_cnn: ModelContract) -> None:
    report = inspect_model(frozen_small_cnn.pb_path)
    assert report.parameters_from == "constants" and report.variables == 0
    assert report.parameters == 3 * 3 * 3 * 4 + 4 + 4 * 5
    assert [c.tensor for c in report.candidates] == ["probs:0"]


@pytest.mark.slow
def test_cli_json(capsys: pytest.CaptureFixture[str], bert_model: ReferenceModel) -> None:
    outcome = run_cli(capsys, "inspect", bert_model.path, "--json")
    assert outcome.code == 0
    document = json.loads(outcome.out)
    assert [i["tensor"] for i in document["inputs"]] == ["input_ids:0", "input_mask:0", "segment_ids:0"]
    assert document["inputs"][0] == {"tensor": "input_ids:0", "dtype": "int32", "shape": [None, 16],
                                     "dynamic_dims": [0], "has_default": False, "from_iterator": False, "label": False,
                                     "signature_key": None}
    assert document["output_candidates"][0]["tensor"] == "class_probs:0"
    assert document["variables"] == 9 and document["parameters_from"] == "checkpoint"


def test_cli_tables(capsys: pytest.CaptureFixture[str], resnet_model: ReferenceModel) -> None:
    outcome = run_cli(capsys, "inspect", resnet_model.path)
    assert outcome.code == 0
    assert "18 variables, 1,555 parameters" in outcome.out
    assert "probs:0" in outcome.out and "has a default" in outcome.out and "dynamic dims 0" in outcome.out
    outcome = run_cli(capsys, "inspect", resnet_model.path, "--top", "0")
    assert outcome.code == 2 and "Invalid value for '--top'" in outcome.err


def test_cli_prints_long_tensor_names_whole(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A name is for copying into --outputs: the table grows wider rather than cut it; assert plumbing is no
    candidate."""
    import tensorflow as tf

    scope = "/".join(f"block_{i}_with_a_long_scope_name" for i in range(4))
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, 3], name="x")
        with tf.name_scope(scope):
            tf.nn.softmax(x, name="probs")
        with tf.name_scope("assert_positive"):
            tf.shape(x, name="Shape")
    pb = tmp_path / "long.pb"
    pb.write_bytes(graph.as_graph_def().SerializeToString())
    outcome = run_cli(capsys, "inspect", pb)
    assert outcome.code == 0, outcome.err
    assert f"{scope}/probs:0" in outcome.out
    assert "assert_positive" not in outcome.out


def test_loss_plumbing_is_never_offered(tmp_path: Path) -> None:
    """A sparse cross-entropy leaves an unconsumed Shape of the labels named after softmax: shape metadata from the
    labels, never an output; the logits the loss reads come right after the softmax beside it."""
    import tensorflow as tf

    from ckpt2pb.inspection import inspect_model

    tf1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [None, 4], name="x")
        labels = tf1.placeholder(tf.int32, [None], name="labels")
        logits = tf.matmul(x, tf.ones([4, 3]), name="logits")
        tf.nn.softmax(logits, name="probs")
        tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
    pb = tmp_path / "train.pb"
    pb.write_bytes(graph.as_graph_def().SerializeToString())
    assert "Shape" in {node.op for node in graph.as_graph_def().node}  # the plumbing is there to be left out
    assert [c.tensor for c in inspect_model(pb).candidates] == ["probs:0", "logits:0"]


def test_inspect_and_freeze_take_the_same_placeholders_for_switches() -> None:
    """One rule: what inspect lists as a switch is what freeze asks to --set."""
    import tensorflow as tf

    from ckpt2pb.graphinfo import is_switch
    from ckpt2pb.inspection import placeholders

    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.placeholder(tf.bool, shape=(), name="scalar_flag")
        tf.compat.v1.placeholder(tf.bool, shape=None, name="shapeless_flag")
        tf.compat.v1.placeholder(tf.bool, shape=(None,), name="mask")
        tf.compat.v1.placeholder(tf.float32, shape=(), name="rate")
        tf.compat.v1.placeholder_with_default(tf.constant(False), shape=(), name="is_training")
    graph_def = graph.as_graph_def()
    by_inspect = {p.tensor.split(":")[0]: p.is_switch for p in placeholders(graph_def, graph)}
    by_freeze = {n.name: is_switch(n) for n in graph_def.node if n.op.startswith("Placeholder")}
    assert by_inspect == by_freeze == {"scalar_flag": True, "shapeless_flag": True, "mask": False, "rate": False,
                                       "is_training": True}


@pytest.mark.slow
@pytest.mark.parametrize("optimizer", ["adam", "momentum", "rmsprop"])
def test_training_state_is_counted_apart_from_the_model(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                        optimizer: str) -> None:
    """An optimizer's slots and counters reach no output: the count the outputs are computed from is the model's
    own (the frozen pb's), whatever the optimizer calls its slots."""
    import tensorflow as tf

    tf1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        images = tf1.placeholder(tf.float32, [None, 6], name="features")
        labels = tf1.placeholder(tf.int64, [None], name="targets")
        def dense(x: object, width: int, scope: str) -> object:
            with tf1.variable_scope(scope):
                kernel = tf1.get_variable("kernel", [x.shape[-1], width])  # type: ignore[attr-defined]
                bias = tf1.get_variable("bias", [width], initializer=tf1.zeros_initializer())
            return tf.matmul(x, kernel) + bias

        hidden = tf.nn.relu(dense(images, 5, "body"))
        logits = dense(hidden, 3, "head")
        tf.nn.softmax(logits, name="scores")
        loss = tf1.losses.sparse_softmax_cross_entropy(labels, logits)
        step = tf1.train.get_or_create_global_step()
        chosen = {"adam": tf1.train.AdamOptimizer(0.01), "momentum": tf1.train.MomentumOptimizer(0.01, 0.9),
                  "rmsprop": tf1.train.RMSPropOptimizer(0.01)}[optimizer]
        chosen.minimize(loss, global_step=step)
        with tf1.Session() as session:
            session.run(tf1.global_variables_initializer())
            prefix = tf1.train.Saver().save(session, str(tmp_path / "model.ckpt"))
    report = inspect_model(prefix)
    model = 6 * 5 + 5 + 5 * 3 + 3
    assert report.output_parameters == model
    assert report.parameters > model  # slots, the step and (Adam) the powers of beta
    outcome = run_cli(capsys, "inspect", prefix)
    assert outcome.code == 0, outcome.err
    assert (f"{report.parameters:,} parameters: {model:,} the outputs are computed from, "
            f"{report.parameters - model:,} only training reads (optimizer slots, step counters)") in outcome.out
    assert json.loads(run_cli(capsys, "inspect", prefix, "--json").out)["output_parameters"] == model


def test_a_model_without_training_state_says_one_count(resnet_model: ReferenceModel,
                                                       frozen_small_cnn: ModelContract) -> None:
    report = inspect_model(resnet_model.path)
    # Every variable but global_step feeds the outputs (batch norm's moving statistics through the cond).
    assert report.output_parameters == report.parameters - 1
    assert inspect_model(frozen_small_cnn.pb_path).output_parameters is None
