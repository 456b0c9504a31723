"""Every refusal of infer freeze, with its exact line: nothing is written when the command refuses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ckpt2pb import freeze as freeze_module
from ckpt2pb.errors import FreezeError, GraphNameError, VerifyError
from infer.freeze import FreezeOptions, freeze_model
from tests.cli import Outcome, run_cli
from tests.models import ReferenceModel


def _freeze(capsys: pytest.CaptureFixture[str], model: ReferenceModel, out: Path, *args: str) -> Outcome:
    return run_cli(capsys, "freeze", model.path, "-o", out, *args)


@pytest.mark.slow
def test_cli_success(capsys: pytest.CaptureFixture[str], resnet_model: ReferenceModel, tmp_path: Path) -> None:
    outcome = _freeze(capsys, resnet_model, tmp_path / "out", "--outputs", "probs:0", "--batch", "2")
    assert outcome.code == 0, outcome.err
    assert outcome.out.splitlines() == ["input   images:0 float32(2,16,16,3)", "output  probs:0 float32(2,10)",
                                        "fixed   is_training = default"]
    assert "verified: max abs diff 0 against the original graph" in outcome.err
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["model.json", "model.pb"]


@pytest.mark.slow
def test_output_exists(capsys: pytest.CaptureFixture[str], resnet_model: ReferenceModel, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "model.pb").write_bytes(b"earlier")
    outcome = _freeze(capsys, resnet_model, out, "--outputs", "probs", "--batch", "2")
    assert outcome.code == 2
    assert outcome.error_line == f"error: {out / 'model.pb'}: exists already"
    assert (out / "model.pb").read_bytes() == b"earlier"
    assert _freeze(capsys, resnet_model, out, "--outputs", "probs", "--batch", "2", "--force").code == 0
    assert (out / "model.pb").read_bytes() != b"earlier"
    outcome = _freeze(capsys, resnet_model, out / "model.pb", "--outputs", "probs", "--batch", "2", "--force")
    assert outcome.error_line == f"error: {out / 'model.pb'} is a file; -o names the folder for model.pb and model.json"


def test_no_outputs_given(capsys: pytest.CaptureFixture[str], resnet_model: ReferenceModel, tmp_path: Path) -> None:
    outcome = _freeze(capsys, resnet_model, tmp_path / "out", "--batch", "2")
    assert outcome.code == 2
    assert outcome.error_line == "error: no outputs given: --outputs names the tensors the frozen model returns"
    assert "hint: likely outputs: probs:0," in outcome.err
    assert not (tmp_path / "out").exists()


def test_wrong_output_name(capsys: pytest.CaptureFixture[str], resnet_model: ReferenceModel, tmp_path: Path) -> None:
    outcome = _freeze(capsys, resnet_model, tmp_path / "out", "--outputs", "prob:0", "--batch", "2")
    assert outcome.code == 2
    assert outcome.error_line == "error: output 'prob:0' is not in the graph; closest: probs:0, pool:0, dropout:0"
    assert not (tmp_path / "out").exists()


def test_output_named_twice(capsys: pytest.CaptureFixture[str], resnet_model: ReferenceModel, tmp_path: Path) -> None:
    outcome = _freeze(capsys, resnet_model, tmp_path / "out", "--outputs", "probs,probs:0", "--batch", "2")
    assert outcome.code == 2
    assert outcome.error_line == "error: output probs:0 is named twice in --outputs"
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_wrong_input_name(capsys: pytest.CaptureFixture[str], bert_model: ReferenceModel, tmp_path: Path) -> None:
    outcome = _freeze(capsys, bert_model, tmp_path / "out", "--outputs", "class_probs", "--inputs",
                      "input_id[2,16],input_mask,segment_ids")
    assert outcome.error_line == "error: input 'input_id' is not in the graph; closest: input_ids, input_mask, " \
                                 "segment_ids"


def test_wrong_dtype_name(capsys: pytest.CaptureFixture[str], resnet_model: ReferenceModel, tmp_path: Path) -> None:
    outcome = _freeze(capsys, resnet_model, tmp_path / "out", "--outputs", "probs", "--inputs",
                      "images:0[2,16,16,3]:flaot32")
    assert outcome.code == 2
    assert outcome.error_line == "error: --inputs 'images:0[2,16,16,3]:flaot32': unknown dtype 'flaot32': expected " \
                                 "one of float16, float32, float64, int8, int16, int32, int64, uint8, uint16, " \
                                 "uint32, uint64, bool"


def test_dtype_differs_from_the_graph(capsys: pytest.CaptureFixture[str], resnet_model: ReferenceModel,
                                      tmp_path: Path) -> None:
    outcome = _freeze(capsys, resnet_model, tmp_path / "out", "--outputs", "probs", "--inputs",
                      "images:0[2,16,16,3]:float16")
    assert outcome.error_line == "error: input images:0: --inputs says float16, the graph's tensor is float32"


@pytest.mark.slow
def test_conflicting_shapes(capsys: pytest.CaptureFixture[str], resnet_model: ReferenceModel, tmp_path: Path) -> None:
    outcome = _freeze(capsys, resnet_model, tmp_path / "out", "--outputs", "probs", "--inputs",
                      "images:0[2,224,224,3]")
    assert outcome.code == 2
    assert outcome.error_line == "error: input images:0: --inputs shape (2,224,224,3) conflicts with the graph's " \
                                 "(?,16,16,3)"
    outcome = _freeze(capsys, resnet_model, tmp_path / "out", "--outputs", "probs", "--inputs", "images[2,16,16]")
    assert outcome.error_line == "error: input images:0: --inputs shape (2,16,16) has rank 3, the graph's tensor " \
                                 "is (?,16,16,3)"
    outcome = _freeze(capsys, resnet_model, tmp_path / "out", "--outputs", "probs", "--inputs",
                      "images[2,16,16,3]", "--batch", "4")
    assert outcome.error_line == "error: input images:0: --batch 4 conflicts with its first dim 2 " \
                                 "(shape (2,16,16,3))"


def test_zero_dim_in_inputs(capsys: pytest.CaptureFixture[str], resnet_model: ReferenceModel, tmp_path: Path) -> None:
    outcome = _freeze(capsys, resnet_model, tmp_path / "out", "--outputs", "probs", "--inputs", "images[0,16,16,3]")
    assert outcome.error_line == ("error: input images:0: --inputs shape (0,16,16,3) has a 0 dim; a model input needs "
                                  "at least one element per dim")


def test_unknown_dims_left(capsys: pytest.CaptureFixture[str], resnet_model: ReferenceModel, tmp_path: Path) -> None:
    outcome = _freeze(capsys, resnet_model, tmp_path / "out", "--outputs", "probs")
    assert outcome.error_line == "error: input images:0: shape (?,16,16,3) still has unknown dims (0)"
    assert "hint: give them in --inputs, e.g. 'images:0[1,16,16,3]', or use --batch N" in outcome.err


def test_needed_placeholder_neither_input_nor_set(capsys: pytest.CaptureFixture[str], bert_model: ReferenceModel,
                                                  tmp_path: Path) -> None:
    outcome = _freeze(capsys, bert_model, tmp_path / "out", "--outputs", "class_probs", "--inputs",
                      "input_ids,segment_ids", "--batch", "2")
    assert outcome.code == 2
    assert outcome.error_line == "error: placeholder input_mask:0 (int32) is needed by the outputs but is neither " \
                                 "an input nor set"
    assert "hint: add it to --inputs, or fix its value with --set input_mask=VALUE" in outcome.err


@pytest.mark.slow
def test_input_the_outputs_do_not_read(capsys: pytest.CaptureFixture[str], resnet_model: ReferenceModel,
                                       dataset_model: ReferenceModel, tmp_path: Path) -> None:
    """An input no output depends on is pruned away: the contract would name a tensor the pb does not take."""
    outcome = _freeze(capsys, resnet_model, tmp_path / "out", "--outputs", "probs", "--inputs", "images,labels",
                      "--batch", "2")
    assert outcome.code == 2
    assert outcome.error_line == "error: input labels:0: the outputs (probs) do not depend on it"
    assert "hint: drop it from --inputs" in outcome.err
    assert not (tmp_path / "out").exists()
    # A replaced tf.data tensor the outputs do not read (the labels of the iterator) is refused the same way.
    outcome = _freeze(capsys, dataset_model, tmp_path / "out", "--outputs", "predictions", "--inputs",
                      "IteratorGetNext:0,IteratorGetNext:1", "--batch", "4")
    assert outcome.error_line == "error: input IteratorGetNext:1: the outputs (predictions) do not depend on it"


def test_set_fixes_a_plain_placeholder(bert_model: ReferenceModel, tmp_path: Path) -> None:
    """--set input_mask=1 makes the mask a constant (all tokens real): the pb takes two inputs."""
    report = freeze_model(bert_model.path, tmp_path, FreezeOptions(
        outputs=("class_probs",), inputs=("input_ids", "segment_ids"), batch=2, assignments={"input_mask": "1"}))
    assert [s.name for s in report.contract.inputs] == ["input_ids:0", "segment_ids:0"]
    assert report.contract.fixed == {"input_mask": "1"}


def test_iterator_output_still_needed(capsys: pytest.CaptureFixture[str], dataset_model: ReferenceModel,
                                      tmp_path: Path) -> None:
    outcome = _freeze(capsys, dataset_model, tmp_path / "out", "--outputs", "predictions", "--batch", "4")
    assert outcome.error_line == "error: the outputs still read the tf.data pipeline through IteratorGetNext, " \
                                 "IteratorV2"
    assert "hint: name the iterator outputs they read: --inputs 'IteratorGetNext:0[?,8,8,3]'" in outcome.err


def test_dataset_input_keeps_its_name(dataset_model: ReferenceModel, tmp_path: Path) -> None:
    report = freeze_model(dataset_model.path, tmp_path, FreezeOptions(
        outputs=("predictions",), inputs=("IteratorGetNext:0",), batch=4))
    assert [s.describe() for s in report.contract.inputs] == ["IteratorGetNext:0 float32(4,8,8,3)"]


@pytest.mark.slow
def test_set_is_training_true_keeps_dropout(resnet_model: ReferenceModel, tmp_path: Path) -> None:
    """--set picks the cond's other branch: dropout stays (op seeds make both graphs draw the same mask)."""
    import tensorflow as tf

    report = freeze_model(resnet_model.path, tmp_path, FreezeOptions(
        outputs=("probs",), batch=2, assignments={"is_training": "true"}))
    assert report.contract.fixed == {"is_training": "true"}
    graph_def = tf.compat.v1.GraphDef.FromString(report.contract.pb_path.read_bytes())
    assert "RandomUniform" in {node.op for node in graph_def.node}


@pytest.mark.slow
def test_verification_catches_a_wrong_freeze(resnet_model: ReferenceModel, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A surgery step that changed a weight is caught: the frozen graph no longer computes the original."""
    import tensorflow as tf

    clear_devices = freeze_module.surgery.clear_devices

    def clear_devices_and_break_the_head(graph_def: Any) -> None:  # a GraphDef; TensorFlow ships no types
        clear_devices(graph_def)
        for node in graph_def.node:
            if node.op == "Const" and len(node.attr["value"].tensor.tensor_shape.dim) == 2:  # the dense kernel
                value = tf.make_ndarray(node.attr["value"].tensor)
                node.attr["value"].tensor.CopyFrom(tf.make_tensor_proto(value * 2.0))

    monkeypatch.setattr(freeze_module.surgery, "clear_devices", clear_devices_and_break_the_head)
    with pytest.raises(VerifyError) as caught:
        freeze_model(resnet_model.path, tmp_path, FreezeOptions(outputs=("probs",), batch=2))
    assert str(caught.value).startswith("output probs:0: frozen graph differs from the checkpoint's by ")
    assert not list(tmp_path.iterdir())


def test_set_unknown_placeholder(resnet_model: ReferenceModel, tmp_path: Path) -> None:
    with pytest.raises(GraphNameError) as caught:
        freeze_model(resnet_model.path, tmp_path, FreezeOptions(
            outputs=("probs",), batch=2, assignments={"is_trainig": "false"}))
    assert str(caught.value) == "--set placeholder 'is_trainig' is not in the graph; closest: is_training"


@pytest.mark.slow
def test_over_protobuf_limit(resnet_model: ReferenceModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(freeze_module, "PROTOBUF_LIMIT", 1000)  # a 2 GiB model is too slow to build in a test
    with pytest.raises(FreezeError) as caught:
        freeze_model(resnet_model.path, tmp_path, FreezeOptions(outputs=("probs",), batch=2))
    assert str(caught.value).endswith("GiB, over protobuf's 2 GiB limit for one .pb")
    assert not list(tmp_path.iterdir())


def test_cli_json_and_no_verify(capsys: pytest.CaptureFixture[str], bert_model: ReferenceModel,
                                tmp_path: Path) -> None:
    import json

    outcome = _freeze(capsys, bert_model, tmp_path / "out", "--outputs", "span_logits:0,class_probs:0", "--batch",
                      "2", "--no-verify", "--json")
    assert outcome.code == 0, outcome.err
    document = json.loads(outcome.out)
    assert document == json.loads((tmp_path / "out" / "model.json").read_text())
    assert [o["tensor"] for o in document["outputs"]] == ["span_logits:0", "class_probs:0"]
    assert document["outputs"][0]["shape"] == [2, 16, 2]
    assert "not verified (--no-verify)" in outcome.err


@pytest.mark.slow
def test_a_switch_can_stay_an_input(resnet_model: ReferenceModel, tmp_path: Path) -> None:
    """Naming is_training in --inputs keeps it a (plain) placeholder, and the cond with it."""
    import tensorflow as tf

    report = freeze_model(resnet_model.path, tmp_path, FreezeOptions(
        outputs=("probs",), inputs=("images", "is_training"), batch=2))
    assert [s.describe() for s in report.contract.inputs] == ["images:0 float32(2,16,16,3)", "is_training:0 bool()"]
    assert report.contract.fixed == {}
    graph_def = tf.compat.v1.GraphDef.FromString(report.contract.pb_path.read_bytes())
    placeholders = {node.name: node.op for node in graph_def.node if node.op.startswith("Placeholder")}
    assert placeholders == {"images": "Placeholder", "is_training": "Placeholder"}


def test_output_node_without_that_output(resnet_model: ReferenceModel, tmp_path: Path) -> None:
    with pytest.raises(GraphNameError) as caught:
        freeze_model(resnet_model.path, tmp_path, FreezeOptions(outputs=("train_op",), batch=2))
    assert str(caught.value) == "output 'train_op': node train_op (AssignAddVariableOp) has 0 output(s)"
    with pytest.raises(GraphNameError) as caught:
        freeze_model(resnet_model.path, tmp_path, FreezeOptions(outputs=("probs:3",), batch=2))
    assert str(caught.value) == "output 'probs:3': node probs (Softmax) has 1 output(s)"


def test_graph_failing_on_the_pinned_shapes(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A reshape whose size is computed at run time fails in verification: one line, naming the inputs fed."""
    import tensorflow as tf

    tf1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [None, 4], name="x")
        product = tf.matmul(x, tf1.get_variable("w", [4, 4]))
        rows = tf.cast(tf.reduce_sum(x) * 0.0, tf.int32) + 3  # 3, known only when it runs
        tf.reshape(product, tf.stack([rows, -1]), name="y")
        with tf1.Session(graph=graph) as session:
            session.run(tf1.global_variables_initializer())
            tf1.train.Saver().save(session, str(tmp_path / "ckpt" / "model.ckpt"))
    outcome = run_cli(capsys, "freeze", tmp_path / "ckpt", "-o", tmp_path / "out", "--outputs", "y", "--batch", "2")
    assert outcome.code == 2
    assert outcome.error_line.startswith("error: the original graph fails on seeded inputs x:0 float32(2,4): ")
    assert "reshape" in outcome.error_line.lower()
    assert "hint: the pinned shapes may not fit the graph" in outcome.err
    assert not (tmp_path / "out").exists()
