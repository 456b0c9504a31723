"""freeze on every kind of source: the pb computes what the framework computed, and takes only its inputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from binio.spec import node_name
from infer.contract import load_contract
from infer.freeze import FreezeOptions, FreezeReport, freeze_model
from tests.ckpt2pb.conftest import FREEZE_ARGS
from tests.models import ReferenceModel


def _run_pb(pb: bytes, feeds: dict[str, np.ndarray], outputs: list[str]) -> tuple[list[np.ndarray], list[str]]:
    import tensorflow as tf

    graph_def = tf.compat.v1.GraphDef.FromString(pb)
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.import_graph_def(graph_def, name="")
    placeholders = sorted(op.name for op in graph.get_operations() if op.type.startswith("Placeholder"))
    with tf.compat.v1.Session(graph=graph) as session:
        return session.run(outputs, feeds), placeholders


@pytest.mark.slow
def test_frozen_pb_matches_the_framework(frozen: tuple[ReferenceModel, FreezeReport]) -> None:
    model, report = frozen
    contract = load_contract(report.contract.path)
    contract.check_pb_unchanged()
    assert [s.name for s in contract.outputs] == list(model.outputs)
    assert all(spec.is_static and spec.batch == model.batch for spec in contract.inputs)
    assert all(spec.is_static for spec in contract.outputs)
    feeds = {spec.name: model.feeds[original] for spec, original in zip(contract.inputs, model.inputs, strict=True)}
    got, placeholders = _run_pb(contract.pb_path.read_bytes(), feeds, list(model.outputs))
    assert placeholders == sorted(spec.node for spec in contract.inputs)
    for name, value in zip(model.outputs, got, strict=True):
        assert value.dtype == model.expected[name].dtype
        np.testing.assert_allclose(value, model.expected[name], rtol=0, atol=1e-5, err_msg=name)
    assert report.verification is not None and report.verification.worst <= 1e-5


@pytest.mark.slow
def test_contract_describes_the_source(frozen: tuple[ReferenceModel, FreezeReport]) -> None:
    import tensorflow as tf

    model, report = frozen
    contract = report.contract
    assert contract.source.frozen_with_tf == tf.__version__
    assert contract.source.kind in ("checkpoint", "saved_model", "keras")
    assert contract.source.tf_version  # every builder's source says who wrote it
    for spec, (name, (dtype_name, shape)) in zip(contract.inputs, model.inputs.items(), strict=True):
        assert spec.dtype == dtype_name
        assert spec.shape[1:] == shape[1:]
        assert node_name(name) == spec.node


@pytest.mark.slow
def test_pb_is_clean_for_older_consumers(frozen: tuple[ReferenceModel, FreezeReport]) -> None:
    """No devices, no training or tf.data ops, no functional control flow left, default attrs stripped."""
    import tensorflow as tf

    _, report = frozen
    graph_def = tf.compat.v1.GraphDef.FromString(report.contract.pb_path.read_bytes())
    ops = {node.op for node in graph_def.node}
    assert not ops & {"If", "StatelessIf", "Switch", "Merge", "IteratorGetNext", "IteratorV2", "VarHandleOp",
                      "VariableV2", "ReadVariableOp", "SaveV2", "RestoreV2", "Assert", "PlaceholderWithDefault",
                      "RandomUniform"}
    assert all(node.device == "" for node in graph_def.node)
    assert not any("_output_shapes" in node.attr for node in graph_def.node)
    assert not graph_def.library.function


@pytest.mark.slow
def test_resnet_batch_norm_loses_its_newer_default_attrs(resnet_model: ReferenceModel, tmp_path: Path) -> None:
    import tensorflow as tf

    from infer.freeze import FreezeOptions, freeze_model

    report = freeze_model(resnet_model.path, tmp_path, FreezeOptions(outputs=("probs",), batch=2, verify=False))
    graph_def = tf.compat.v1.GraphDef.FromString(report.contract.pb_path.read_bytes())
    norms = [node for node in graph_def.node if node.op == "FusedBatchNormV3"]
    assert len(norms) == 3
    # TF 1.15's op registry has no exponential_avg_factor: it must not be written (it equals its default 1.0).
    assert all("exponential_avg_factor" not in node.attr for node in norms)
    assert all(node.attr["is_training"].b is False and "is_training" in node.attr for node in norms)
    assert report.contract.fixed == {"is_training": "default"}
    assert report.verification is None
    assert {node.op for node in graph_def.node} >= {"MaxPoolWithArgmax", "Conv2D", "Softmax", "AddV2"}


def test_channels_first_graph_gets_nchw_layout(tmp_path: Path) -> None:
    import tensorflow as tf

    from infer.freeze import FreezeOptions, freeze_model

    tf1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        images = tf1.placeholder(tf.float32, [None, 3, 8, 8], name="images")
        kernel = tf1.get_variable("kernel", [3, 3, 3, 4])
        tf.nn.relu(tf.nn.conv2d(images, kernel, 1, "SAME", data_format="NCHW"), name="features")
        with tf1.Session(graph=graph) as session:
            session.run(tf1.global_variables_initializer())
            tf1.train.Saver().save(session, str(tmp_path / "ckpt" / "model.ckpt"))
    # CPU kernels may not run NCHW convolutions, so only the graph is checked here.
    report = freeze_model(tmp_path / "ckpt", tmp_path / "out", FreezeOptions(
        outputs=("features",), batch=1, verify=False))
    assert [(s.layout, s.shape) for s in report.contract.inputs] == [("NCHW", (1, 3, 8, 8))]
    assert [s.layout for s in report.contract.outputs] == ["NCHW"]


@pytest.mark.slow
def test_batch_minus_one_keeps_the_batch_dynamic_for_atc(capsys: pytest.CaptureFixture[str],
                                                         resnet_model: ReferenceModel, tmp_path: Path) -> None:
    """--batch -1: the pb's placeholder keeps batch -1, the contract says ?, and convert's --dynamic-batch acts on
    it; verification still runs (at batch 2)."""
    import tensorflow as tf

    from infer.freeze import FreezeOptions, freeze_model
    from tests.cli import run_cli

    report = freeze_model(resnet_model.path, tmp_path / "dyn", FreezeOptions(outputs=("probs",), batch=-1))
    assert [s.shape for s in report.contract.inputs] == [(None, 16, 16, 3)]
    assert [s.shape for s in report.contract.outputs] == [(None, 10)]
    assert report.verification is not None and report.verification.worst <= 1e-5
    graph_def = tf.compat.v1.GraphDef.FromString(report.contract.pb_path.read_bytes())
    placeholder = next(node for node in graph_def.node if node.name == "images")
    assert [d.size for d in placeholder.attr["shape"].shape.dim] == [-1, 16, 16, 3]
    for batch in (1, 3):  # the frozen pb takes any batch
        got, _ = _run_pb(report.contract.pb_path.read_bytes(),
                         {"images:0": np.zeros((batch, 16, 16, 3), np.float32)}, ["probs:0"])
        assert got[0].shape == (batch, 10)
    outcome = run_cli(capsys, "convert", tmp_path / "dyn", "--target", "om", "--soc-version", "Ascend310",
                      "--dynamic-batch", "1,2,4", "--dry-run")
    assert outcome.code == 0, outcome.err
    assert "--input_shape=images:-1,16,16,3" in outcome.out and "--dynamic_batch_size=1,2,4" in outcome.out


def test_batch_minus_one_refuses_a_static_batch(bert_model: ReferenceModel, tmp_path: Path) -> None:
    import pytest

    from ckpt2pb.errors import FreezeError
    from infer.freeze import FreezeOptions, freeze_model

    with pytest.raises(FreezeError) as caught:
        freeze_model(bert_model.path, tmp_path, FreezeOptions(
            outputs=("class_probs",), inputs=("input_ids[2,16]", "input_mask", "segment_ids"), batch=-1))
    assert str(caught.value) == "input input_ids:0: --batch -1 keeps the first dim unknown, but it is 2 (shape (2,16))"
    with pytest.raises(FreezeError) as caught:
        freeze_model(bert_model.path, tmp_path, FreezeOptions(outputs=("class_probs",), batch=-2))
    assert str(caught.value) == "--batch -2: expected 1 to 2147483647, or -1 to keep the first dim unknown"


def test_checks_and_prints_are_stripped(tmp_path: Path) -> None:
    """Asserts go (with the control edges on them and, in TF2, the AssertGuard cond around them); CheckNumerics,
    StopGradient and v1 Print (which returns its input) become Identity."""
    import tensorflow as tf

    from infer.freeze import FreezeOptions, freeze_model

    tf1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [None, 4], name="x")
        weights = tf1.get_variable("w", [4, 3])
        checked = tf.debugging.check_numerics(tf.matmul(x, weights), "logits are not finite")
        frozen_part = tf.stop_gradient(checked)
        printed = tf1.Print(frozen_part, [frozen_part], "logits: ")
        with tf.control_dependencies([tf1.assert_less(printed, 1e9, message="too large")]):
            tf.nn.softmax(printed, name="probs")
        with tf1.Session(graph=graph) as session:
            session.run(tf1.global_variables_initializer())
            tf1.train.Saver().save(session, str(tmp_path / "ckpt" / "model.ckpt"))
    report = freeze_model(tmp_path / "ckpt", tmp_path / "out", FreezeOptions(outputs=("probs",), batch=2))
    assert report.verification is not None and report.verification.worst <= 1e-5
    graph_def = tf1.GraphDef.FromString(report.contract.pb_path.read_bytes())
    ops = {node.op for node in graph_def.node}
    assert not ops & {"Assert", "Print", "PrintV2", "CheckNumerics", "StopGradient"}, ops
    assert "Identity" in ops and "MatMul" in ops and "Softmax" in ops
    probs = next(node for node in graph_def.node if node.name == "probs")
    assert list(probs.input) == ["Print"]  # the control edge on the assert went with it
    assert "If" not in ops and not graph_def.library.function  # TF2 wraps the Assert in an AssertGuard cond


@pytest.mark.slow
def test_freezing_again_writes_the_same_bytes(resnet_model: ReferenceModel, tmp_path: Path) -> None:
    """The pb's sha256 is recorded everywhere downstream: one graph must give one file (protobuf's map fields
    serialise in insertion order unless asked to sort them)."""
    args = FREEZE_ARGS["resnet_model"]
    digests = {freeze_model(resnet_model.path, tmp_path / f"again{i}", FreezeOptions(
        outputs=tuple(args["outputs"]), batch=args["batch"])).contract.pb_sha256
               for i in range(3)}
    assert len(digests) == 1
