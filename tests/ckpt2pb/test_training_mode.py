"""An Estimator's model_dir (its checkpoint's meta graph is the TRAIN graph: batch norms on each batch's own
statistics, a dropout drawing its mask, as Python bools, no placeholder to fold): freeze puts them in inference mode
and says so, inspect says it first; what cannot be put in inference mode is refused. tests/estimator_models.py
says why the Estimator itself is reproduced with plain tf.compat.v1 code."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ckpt2pb.inspection import inspect_model
from infer.freeze import FreezeOptions, freeze_model
from tests.atc_wrap.outputs import tf_outputs
from tests.cli import run_cli
from tests.estimator_models import BATCH, IMAGE, EstimatorDir, build_estimator_dir

FREEZE_ARGS = ("--inputs", f"IteratorGetNext:0[?,{','.join(map(str, IMAGE))}]", "--outputs", "logits",
               "--batch", str(BATCH))


@pytest.fixture(scope="module")
def estimator_dir(tmp_path_factory: pytest.TempPathFactory) -> EstimatorDir:
    return build_estimator_dir(tmp_path_factory.mktemp("model_dir"))


def _batches() -> tuple[np.ndarray, np.ndarray]:
    """Two batches sharing their first sample, the others different (the second's are dump-bin's zero padding)."""
    rng = np.random.default_rng(7)
    first = (rng.normal(size=(BATCH, *IMAGE)) * 2.0 + 0.5).astype(np.float32)
    second = np.zeros_like(first)
    second[0] = first[0]
    return first, second


def test_the_checkpoint_s_own_graph_mixes_the_samples_of_a_batch(estimator_dir: EstimatorDir) -> None:
    """The situation: fed as it is, the TRAIN graph gives the first sample another answer when its neighbours
    change, and not the PREDICT graph's."""
    first, second = _batches()
    a, b = estimator_dir.train_graph_logits(first), estimator_dir.train_graph_logits(second)
    assert np.abs(a[0] - b[0]).max() > 1e-2
    assert np.abs(a[0] - estimator_dir.predict(first)[0]).max() > 1e-2


def test_frozen_without_the_training_mode_pass_a_sample_s_output_depends_on_its_batch(
        estimator_dir: EstimatorDir, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What freeze wrote before: the TRAIN graph frozen as it is, verified against itself (max abs diff 0) and yet
    giving the first sample another answer when its neighbours (dump-bin's zero padding) change."""
    import ckpt2pb.freeze
    from ckpt2pb.training_mode import TrainingMode

    monkeypatch.setattr(ckpt2pb.freeze, "find_training_mode", lambda graph_def, targets: TrainingMode())
    report = freeze_model(estimator_dir.model_dir, tmp_path / "model",
                          FreezeOptions(outputs=("logits",), inputs=(FREEZE_ARGS[1],), batch=BATCH))
    assert report.verification is not None and report.verification.worst <= report.verification.tolerance
    first, second = _batches()
    with_neighbours = tf_outputs(report.contract, {"IteratorGetNext:0": first})[0]
    with_padding = tf_outputs(report.contract, {"IteratorGetNext:0": second})[0]
    assert np.abs(with_neighbours[0] - with_padding[0]).max() > 1e-2
    assert np.abs(with_neighbours - estimator_dir.predict(first)).max() > 1e-2


def test_freeze_puts_the_training_graph_in_inference_mode_and_says_so(
        estimator_dir: EstimatorDir, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    outcome = run_cli(capsys, "freeze", str(estimator_dir.model_dir), "-o", str(tmp_path / "model"), *FREEZE_ARGS)
    assert outcome.code == 0, outcome.err
    assert ("the graph computes in training mode: put 1 batch norm (bn_conv/FusedBatchNormV3), 2 batch statistics "
            "(bn_dense/moments/Squeeze, bn_dense/moments/Squeeze_1) and 1 dropout (dropout/SelectV2) in inference "
            "mode") in outcome.err
    assert "verified: max abs diff" in outcome.err  # against the source in inference mode: the same graph
    recorded = json.loads((tmp_path / "model" / "model.json").read_text())["inference_mode"]
    assert recorded["bn_conv/FusedBatchNormV3"].startswith("batch norm: is_training false")
    assert recorded["bn_dense/moments/Squeeze"].endswith("the moving average bn_dense/moving_mean")
    assert recorded["bn_dense/moments/Squeeze_1"].endswith("the moving average bn_dense/moving_variance")
    assert recorded["dropout/SelectV2"].startswith("dropout: off")

    from infer.contract import load_contract

    contract = load_contract(tmp_path / "model")
    first, second = _batches()
    a = tf_outputs(contract, {"IteratorGetNext:0": first})[0]
    b = tf_outputs(contract, {"IteratorGetNext:0": second})[0]
    np.testing.assert_array_equal(a[0], b[0])  # no sample's output depends on its neighbours
    np.testing.assert_allclose(a, estimator_dir.predict(first), rtol=0, atol=1e-5)  # and it is PREDICT's
    from ckpt2pb.protobuf import read_graph_def

    ops = {node.op for node in read_graph_def(contract.pb_path).node}
    assert not {op for op in ops if "Random" in op}  # the dropout's sampler is gone with it
    assert contract.random_ops == {}


@pytest.mark.slow
def test_inspect_says_the_graph_computes_in_training_mode(estimator_dir: EstimatorDir,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    report = inspect_model(estimator_dir.model_dir)
    assert {(op.node, op.kind) for op in report.training_mode} == {
        ("bn_conv/FusedBatchNormV3", "batch norm"), ("bn_dense/moments/Squeeze", "batch statistic"),
        ("bn_dense/moments/Squeeze_1", "batch statistic"), ("dropout/SelectV2", "dropout")}
    outcome = run_cli(capsys, "inspect", str(estimator_dir.model_dir))
    assert outcome.code == 0, outcome.err
    assert "training mode: 1 batch norm (bn_conv/FusedBatchNormV3), 2 batch statistics" in outcome.out
    assert "freeze puts them in inference mode" in outcome.out
    listed = json.loads(run_cli(capsys, "inspect", str(estimator_dir.model_dir), "--json").out)["training_mode"]
    assert {item["node"] for item in listed} == {op.node for op in report.training_mode}


def test_a_batch_norm_without_moving_statistics_is_refused(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """`tf.nn.fused_batch_norm(is_training=True)` without mean and variance, and no update of moving averages:
    nothing to compute inference mode from."""
    import tensorflow as tf

    tf1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        images = tf1.placeholder(tf.float32, [None, *IMAGE], name="images")
        scale = tf1.get_variable("scale", [IMAGE[-1]], initializer=tf1.ones_initializer())
        offset = tf1.get_variable("offset", [IMAGE[-1]], initializer=tf1.zeros_initializer())
        normalised, _, _ = tf1.nn.fused_batch_norm(images, scale, offset, is_training=True, name="norm")
        tf.reduce_mean(normalised, axis=[1, 2], name="out")
        with tf1.Session(graph=graph) as session:
            session.run(tf1.global_variables_initializer())
            tf1.train.Saver().save(session, str(tmp_path / "ckpt" / "model.ckpt"))
    outcome = run_cli(capsys, "freeze", str(tmp_path / "ckpt"), "-o", str(tmp_path / "model"), "--outputs", "out",
                      "--batch", "2")
    assert outcome.code == 2
    assert ("the outputs read 1 batch norm (norm) in training mode, with no moving mean and variance in the graph "
            "to use instead") in outcome.err
    assert "hint: build the graph in inference mode (training=False; an Estimator's PREDICT graph" in outcome.err
    assert not (tmp_path / "model").exists()
    assert "cannot be put in inference mode" in run_cli(capsys, "inspect", str(tmp_path / "ckpt")).out


@pytest.mark.slow
def test_freeze_fills_an_empty_moving_statistic_from_its_update(tmp_path: Path) -> None:
    """A fused batch norm given no mean and variance, whose training updates moving averages from its batch
    statistics (outputs 1-2): those averages become its inputs 3-4."""
    built = build_estimator_dir(tmp_path / "model_dir", moving_stats_in_op=False)
    report = freeze_model(built.model_dir, tmp_path / "model",
                          FreezeOptions(outputs=("logits",), inputs=(FREEZE_ARGS[1],), batch=BATCH))
    changes = {op.node: op.change for op in report.training_mode}
    assert changes["bn_conv/FusedBatchNormV3"] == ("is_training false, reading the moving averages its training "
                                                   "updates (bn_conv/moving_mean, bn_conv/moving_variance)")
    first, second = _batches()
    a = tf_outputs(report.contract, {"IteratorGetNext:0": first})[0]
    np.testing.assert_array_equal(a[0], tf_outputs(report.contract, {"IteratorGetNext:0": second})[0][0])
    np.testing.assert_allclose(a, built.predict(first), rtol=0, atol=1e-5)


def test_a_dropout_that_is_no_inverted_dropout_is_left_alone(tmp_path: Path) -> None:
    """A random 0/1 mask whose scale is not 1 / its keep probability is noise the model means: not a dropout."""
    import tensorflow as tf

    from ckpt2pb.training_mode import find_training_mode

    tf1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [2, 4], name="x")
        mask = tf.cast(tf1.random_uniform([2, 4]) >= 0.25, tf.float32)
        tf.multiply(x * 3.0, mask, name="masked")  # keeps 3/4, scales by 3: not an inverted dropout's 4/3
        tf.nn.dropout(x, rate=0.25, name="dropout")
    found = find_training_mode(graph.as_graph_def(), ["masked", "dropout/SelectV2"])
    assert [(op.node, op.kind) for op in found.ops] == [("dropout/SelectV2", "dropout")]
    assert "keep probability 0.75, scale 1.33" in found.ops[0].change


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("tf_keras") is None,
                    reason="tf_keras is not installed (pip install tf_keras: see docs/tf1-code.md)")
def test_a_model_dir_written_with_tf_layers_freezes_to_its_predict_graph(tmp_path: Path) -> None:
    """The same with tf.compat.v1.layers' own batch norms and dropout (what r1 ResNet calls), in its own process."""
    subprocess.run([sys.executable, "-m", "tests.legacy_estimator_model", str(tmp_path)], check=True,
                   env={**os.environ, "TF_USE_LEGACY_KERAS": "1"}, capture_output=True)
    report = freeze_model(tmp_path / "model_dir", tmp_path / "model",
                          FreezeOptions(outputs=("logits",), inputs=("IteratorGetNext:0[?,8,8,3]",), batch=4))
    assert sorted(op.kind for op in report.training_mode) == ["batch norm", "batch statistic", "batch statistic",
                                                              "dropout"]
    expected = np.load(tmp_path / "expected.npz")
    got = tf_outputs(report.contract, {"IteratorGetNext:0": expected["images"]})[0]
    np.testing.assert_allclose(got, expected["logits"], rtol=0, atol=1e-5)
    alone = np.zeros_like(expected["images"])
    alone[0] = expected["images"][0]
    np.testing.assert_array_equal(tf_outputs(report.contract, {"IteratorGetNext:0": alone})[0][0], got[0])


def test_a_tensor_centred_by_its_own_mean_over_axis_0_is_named_not_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`tf.nn.moments` over axis 0 with no moving average: a batch norm where axis 0 is the batch, the model's own
    normalisation where it is a sequence's time axis; freeze warns and leaves it."""
    import tensorflow as tf

    tf1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        frames = tf1.placeholder(tf.float32, [None, 6], name="frames")
        mean, variance = tf.nn.moments(frames, [0])
        centred = tf.nn.batch_normalization(frames, mean, variance, None, None, 1e-3)
        tf.matmul(centred, tf1.get_variable("w", [6, 2]), name="out")
        with tf1.Session(graph=graph) as session:
            session.run(tf1.global_variables_initializer())
            tf1.train.Saver().save(session, str(tmp_path / "ckpt" / "model.ckpt"))
    outcome = run_cli(capsys, "freeze", str(tmp_path / "ckpt"), "-o", str(tmp_path / "model"), "--outputs", "out",
                      "--batch", "4")
    assert outcome.code == 0, outcome.err
    assert "warning: 1 batch statistic (moments/mean): a tensor centred by its own mean over axis 0" in outcome.err
    assert "training mode?: 1 batch statistic (moments/mean)" in run_cli(capsys, "inspect", str(tmp_path / "ckpt")).out
