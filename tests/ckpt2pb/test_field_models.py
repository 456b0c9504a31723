"""Models as found in the field (issue 11), each through every stage: freeze -> convert (stand-in, force_fp32) ->
dump-bin -> run -> compare must PASS, plus what the situation needs."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.cli import run_cli
from tests.field_models import (
    build_data_cond,
    build_dropout_switches,
    build_metric_read_softmax,
    build_noisy,
    build_slash_prefix,
    build_switch_cond,
    build_unrevivable_saved_model,
)
from tests.models import ReferenceModel
from tests.stages import run_every_stage

pytestmark = pytest.mark.slow

_HAS_TF_KERAS = importlib.util.find_spec("tf_keras") is not None
_NO_TF_KERAS = "tf_keras is not installed (pip install tf_keras: see the README's TF1-code section)"

# Op types no frozen inference graph for ATC may hold: functional control flow, TF1 control flow, samplers.
_CONTROL_AND_RANDOM = {"If", "StatelessIf", "Switch", "Merge", "RandomUniform", "PartitionedCall",
                       "StatefulPartitionedCall"}


def _graph_def(pb: Path) -> Any:  # a GraphDef; TensorFlow ships no types
    import tensorflow as tf

    return tf.compat.v1.GraphDef.FromString(pb.read_bytes())


def _all_ops(graph_def: Any) -> set[str]:
    """The op types of the graph and of every function in its library."""
    ops = {node.op for node in graph_def.node}
    for function in graph_def.library.function:
        ops |= {node.op for node in function.node_def}
    return ops


# ---- 1. A checkpoint saved with a prefix that ends in '/' ----

@pytest.fixture(scope="module")
def slash_prefix(tmp_path_factory: pytest.TempPathFactory) -> ReferenceModel:
    return build_slash_prefix(tmp_path_factory.mktemp("slash"))


@pytest.mark.parametrize("spelling", ["folder", "folder/", ".meta", ".index"])
def test_prefix_ending_in_slash_inspects_and_freezes_every_way(slash_prefix: ReferenceModel, spelling: str,
                                                                tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = slash_prefix.path
    given = {"folder": str(run_dir), "folder/": f"{run_dir}/", ".meta": f"{run_dir}/.meta",
             ".index": f"{run_dir}/.index"}[spelling]
    inspected = run_cli(capsys, "inspect", given, "--json")
    assert inspected.code == 0, inspected.err
    report = json.loads(inspected.out)
    assert report["output_candidates"][0]["tensor"] == "probs:0"
    assert report["variables"] == 2 and report["parameters_from"] == "checkpoint"
    frozen = run_cli(capsys, "freeze", given, "-o", str(tmp_path / "model"), "--outputs", "probs:0", "--batch", "2")
    assert frozen.code == 0, frozen.err
    contract = json.loads((tmp_path / "model" / "model.json").read_text())
    assert contract["source"]["path"] == f"{run_dir.resolve()}/"  # the prefix as found: its '/' kept
    init = run_cli(capsys, "pipeline", "init", given, "-o", str(tmp_path / "p.toml"))
    assert init.code == 0, init.err
    assert 'outputs = ["probs:0"]' in (tmp_path / "p.toml").read_text()


def test_prefix_ending_in_slash_passes_every_stage(slash_prefix: ReferenceModel, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    result = run_every_stage(capsys, f"{slash_prefix.path}/", tmp_path, "--outputs", "probs:0", "--batch", "2")
    assert result.verdict == "PASSED", result.compare.out + result.compare.err


# ---- 3. A shape-less bool switch steering tf.cond ----

@pytest.fixture(scope="module")
def switch_cond(tmp_path_factory: pytest.TempPathFactory) -> ReferenceModel:
    return build_switch_cond(tmp_path_factory.mktemp("switch_cond"))


def test_shapeless_switch_folds_the_cond_and_passes(switch_cond: ReferenceModel, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    result = run_every_stage(capsys, switch_cond.path, tmp_path, "--outputs", "probs:0", "--inputs", "images",
                             "--batch", "2", "--set", "is_training=false")
    assert result.verdict == "PASSED", result.compare.out + result.compare.err
    graph_def = _graph_def(result.contract.pb_path)
    assert not _all_ops(graph_def) & _CONTROL_AND_RANDOM
    assert not graph_def.library.function
    assert {"OptionalFromValue", "OptionalNone"}.isdisjoint(_all_ops(graph_def))
    norms = [node for node in graph_def.node if node.op == "FusedBatchNormV3"]
    assert len(norms) == 1 and "exponential_avg_factor" not in norms[0].attr
    assert [(s.name, s.shape) for s in result.contract.outputs] == [("probs:0", (2, 5))]  # the batch static again
    assert result.contract.tf115_unknown_ops == {} and result.contract.random_ops == {}
    assert "warning" not in result.freeze.err


def test_shapeless_switch_output_matches_tensorflow(switch_cond: ReferenceModel, tmp_path: Path) -> None:
    from infer.freeze import FreezeOptions, freeze_model
    from tests.ckpt2pb.test_freeze import _run_pb

    report = freeze_model(switch_cond.path, tmp_path, FreezeOptions(
        outputs=("probs:0",), batch=2, assignments={"is_training": "false"}))
    got, placeholders = _run_pb(report.contract.pb_path.read_bytes(), switch_cond.feeds, ["probs:0"])
    assert placeholders == ["images"]
    np.testing.assert_allclose(got[0], switch_cond.expected["probs:0"], rtol=0, atol=1e-6)


@pytest.mark.parametrize("inputs", [(), ("--inputs", "images")])
def test_unset_bool_switch_is_hinted_as_a_set(switch_cond: ReferenceModel, inputs: tuple[str, ...],
                                              tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Without --inputs the switch is not taken for an input whose shape is missing: it is a switch to set."""
    outcome = run_cli(capsys, "freeze", switch_cond.path, "-o", str(tmp_path / "m"), "--outputs", "probs:0",
                      *inputs, "--batch", "2")
    assert outcome.code != 0
    assert outcome.error_line == ("error: placeholder is_training:0 (bool) is needed by the outputs but is neither "
                                  "an input nor set")
    assert "--set is_training=false" in outcome.err and "--inputs" not in outcome.err
    listed = run_cli(capsys, "inspect", switch_cond.path)
    assert re.search(r"is_training:0 +bool +unknown rank +a switch: fix it at freeze with --set is_training=false *$",
                     listed.out, re.MULTILINE), listed.out  # one line: off a terminal no cell wraps


def test_wrong_set_name_gets_the_closest(switch_cond: ReferenceModel, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    outcome = run_cli(capsys, "freeze", switch_cond.path, "-o", str(tmp_path / "m"), "--outputs", "probs:0",
                      "--inputs", "images", "--batch", "2", "--set", "is_trainng=false")
    assert outcome.code != 0
    assert "is_training" in outcome.error_line + outcome.err


# ---- 4. Dropout whose switch is off ----

@pytest.fixture(scope="module")
def dropout(tmp_path_factory: pytest.TempPathFactory) -> ReferenceModel:
    return build_dropout_switches(tmp_path_factory.mktemp("dropout"))


def test_dropout_switched_off_leaves_no_random_op(dropout: ReferenceModel, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    result = run_every_stage(capsys, dropout.path, tmp_path, "--outputs", ",".join(dropout.outputs),
                             "--batch", "2", "--set", "keep_prob=1.0")
    assert result.verdict == "PASSED", result.compare.out + result.compare.err
    ops = _all_ops(_graph_def(result.contract.pb_path))
    assert not {op for op in ops if "Random" in op}
    assert result.contract.random_ops == {}
    assert result.contract.fixed == {"keep_prob": "1.0", "default_keep_prob": "default"}


def test_dropout_switched_off_computes_the_identity(dropout: ReferenceModel, tmp_path: Path) -> None:
    from infer.freeze import FreezeOptions, freeze_model
    from tests.ckpt2pb.test_freeze import _run_pb

    report = freeze_model(dropout.path, tmp_path, FreezeOptions(
        outputs=tuple(dropout.outputs), batch=2, assignments={"keep_prob": "1.0"}))
    got, _ = _run_pb(report.contract.pb_path.read_bytes(), dropout.feeds, list(dropout.outputs))
    for name, value in zip(dropout.outputs, got, strict=True):
        np.testing.assert_array_equal(value, dropout.expected[name], err_msg=name)


def test_dropout_switched_off_leaves_no_random_op_with_a_dynamic_batch(dropout: ReferenceModel,
                                                                       tmp_path: Path) -> None:
    """`--batch -1` (for ATC's dynamic batch): the masks have no static shape, so the samplers become fills."""
    from infer.freeze import FreezeOptions, freeze_model
    from tests.ckpt2pb.test_freeze import _run_pb

    report = freeze_model(dropout.path, tmp_path, FreezeOptions(
        outputs=tuple(dropout.outputs), batch=-1, assignments={"keep_prob": "1.0"}))
    assert not {op for op in _all_ops(_graph_def(report.contract.pb_path)) if "Random" in op}
    assert report.contract.random_ops == {}
    assert all(spec.shape[0] is None for spec in report.contract.outputs)
    for copies in (1, 3):  # batches of 2 and 6: dropout switched off is the identity at any batch
        feeds = {name: np.concatenate([value] * copies) for name, value in dropout.feeds.items()}
        got, _ = _run_pb(report.contract.pb_path.read_bytes(), feeds, list(dropout.outputs))
        for name, value in zip(dropout.outputs, got, strict=True):
            # Not bit-exact: the matmul's kernel blocking changes with the batch (one float32 ulp seen at batch 6),
            # while a dropout still drawing would zero or scale whole elements, far outside this tolerance.
            np.testing.assert_allclose(value, np.concatenate([dropout.expected[name]] * copies), rtol=1e-6,
                                       atol=1e-7, err_msg=name)


def test_remaining_randomness_is_named_recorded_and_in_the_verdict(tmp_path_factory: pytest.TempPathFactory,
                                                                   tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    noisy = build_noisy(tmp_path_factory.mktemp("noisy"))
    result = run_every_stage(capsys, noisy.path, tmp_path, "--outputs", "noisy:0", "--batch", "2")
    random_ops = {"random_normal/RandomStandardNormal": "RandomStandardNormal"}
    assert result.contract.random_ops == random_ops
    assert "warning: the frozen graph draws random numbers: random_normal/RandomStandardNormal " \
           "(RandomStandardNormal)" in result.freeze.err
    assert result.compare.code == 0
    assert result.verdict == "PASSED"
    assert ("the model draws random numbers: random_normal/RandomStandardNormal (RandomStandardNormal); TensorFlow "
            "and the converted model draw differently") in result.verdict_line.split(" | ")


# ---- 6. Hints and templates for switches ----

def test_pipeline_init_writes_the_switch_as_set_and_paths_relative_to_the_file(
        switch_cond: ReferenceModel, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The file init writes runs as it is (but for the precision mode): its first run passes."""
    from infer.pipeline.config import load_config

    np.save(tmp_path / "data.npy", np.random.default_rng(0).standard_normal((3, 8, 8, 3)).astype(np.float32))
    (tmp_path / "labels.txt").write_text("0\n1\n2\n")
    monkeypatch.chdir(tmp_path)
    outcome = run_cli(capsys, "pipeline", "init", switch_cond.path, "-o", "sub/p.toml", "--data", "data.npy",
                      "--labels", "labels.txt")
    assert outcome.code == 0, outcome.err
    toml = tmp_path / "sub" / "p.toml"
    config = load_config(toml)  # checks that every named file is there
    assert config.model.freeze.assignments == {"is_training": "false"}
    assert config.model.freeze.inputs == ("images:0",) and config.model.outputs == ("probs:0",)
    text = toml.read_text()
    # outside the file's folder: written absolute (the file refuses a relative path with '..')
    assert f'source = "{tmp_path / "data.npy"}"' in text and f'labels = "{tmp_path / "labels.txt"}"' in text
    assert "set = { is_training = false }" in text
    toml.write_text(text.replace('precision_mode = "force_fp16"', 'precision_mode = "force_fp32"'))
    ran = run_cli(capsys, "pipeline", "run", "sub/p.toml")
    assert ran.code == 0, ran.out + ran.err
    assert "PASSED" in ran.out.split()


def test_a_shapeless_keep_prob_is_hinted_as_a_set(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The TF1 tutorials' `keep_prob = tf.compat.v1.placeholder(tf.float32)`: no shape at all, so it is no
    bool switch; inspect, freeze's refusal and pipeline init's file each say that a setting is fixed by a set."""
    import tensorflow as tf

    from tests.models import _save_checkpoint

    tf1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        features = tf1.placeholder(tf.float32, [None, 6], name="features")
        keep_prob = tf1.placeholder(tf.float32, name="keep_prob")
        weights = tf1.get_variable("dense/weights", [6, 4])
        tf.identity(tf1.nn.dropout(tf.matmul(features, weights), keep_prob=keep_prob), name="scores")
        with tf1.Session(graph=graph) as session:
            session.run(tf1.global_variables_initializer())
            prefix = _save_checkpoint(graph, session, tmp_path / "ckpt")
    table = run_cli(capsys, "inspect", prefix)
    assert re.search(r"keep_prob:0 +float32 +unknown rank +no shape: a setting", table.out), table.out
    refused = run_cli(capsys, "freeze", prefix, "-o", str(tmp_path / "model"), "--outputs", "scores", "--batch", "2")
    assert refused.code != 0
    assert "error: input keep_prob:0: the graph does not know its rank" in refused.err
    assert "for a setting such as keep_prob, its value: --set keep_prob=VALUE" in refused.err
    init = run_cli(capsys, "pipeline", "init", prefix, "-o", str(tmp_path / "p.toml"), "--data", "random:0")
    assert init.code == 0, init.err
    assert "# Inputs without a shape: keep_prob:0. A setting such as keep_prob belongs in set " \
           "(set = { keep_prob = 1.0 })" in (tmp_path / "p.toml").read_text()
    frozen = run_cli(capsys, "freeze", prefix, "-o", str(tmp_path / "model"), "--outputs", "scores", "--batch", "2",
                     "--set", "keep_prob=1.0")
    assert frozen.code == 0, frozen.err
    assert not {op for op in _all_ops(_graph_def(tmp_path / "model" / "model.pb")) if "Random" in op}


def test_pipeline_hint_for_an_unset_switch_is_toml(switch_cond: ReferenceModel, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    toml = tmp_path / "p.toml"
    toml.write_text(f'[model]\nsource = "{switch_cond.path}"\noutputs = ["probs:0"]\ninputs = ["images:0"]\n'
                    'batch = 2\n\n[data]\nsource = "random:0"\n')
    outcome = run_cli(capsys, "pipeline", "run", str(toml))
    assert outcome.code != 0
    assert outcome.error_line == ("error: freeze: placeholder is_training:0 (bool) is needed by the outputs but is "
                                  "neither an input nor set")
    assert f"hint: in {toml} [model]: set = {{ is_training = false }}" in outcome.err


# ---- 5. inspect finds the real output even when training ops consume it ----

@pytest.mark.parametrize("from_dataset", [False, True], ids=["placeholders", "tf.data iterator"])
def test_softmax_read_only_by_metrics_is_the_first_candidate(tmp_path_factory: pytest.TempPathFactory,
                                                              tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                              from_dataset: bool) -> None:
    from infer.pipeline.config import load_config

    model = build_metric_read_softmax(tmp_path_factory.mktemp("metric"), from_dataset=from_dataset)
    (images,) = model.inputs  # images:0, or IteratorGetNext:0 beside the labels' IteratorGetNext:1
    inspected = run_cli(capsys, "inspect", model.path, "--json")
    assert inspected.code == 0, inspected.err
    candidates = [c["tensor"] for c in json.loads(inspected.out)["output_candidates"]]
    assert candidates[0] == "probs:0", candidates
    assert not {"loss:0", "accuracy:0"} & set(candidates)  # scalars computed from the labels
    init = run_cli(capsys, "pipeline", "init", model.path, "-o", str(tmp_path / "p.toml"), "--data", "random:0")
    assert init.code == 0, init.err
    config = load_config(tmp_path / "p.toml")
    assert config.model.outputs == ("probs:0",) and config.model.freeze.inputs == (images,)
    result = run_every_stage(capsys, model.path, tmp_path / "stages", "--outputs", "probs:0", "--inputs", images,
                             "--batch", "2")
    assert result.verdict == "PASSED", result.compare.out + result.compare.err


# ---- 2. TF2 SavedModels that TF 2.16+ cannot revive ----

@pytest.fixture(scope="module")
def unrevivable(tmp_path_factory: pytest.TempPathFactory) -> ReferenceModel:
    return build_unrevivable_saved_model(tmp_path_factory.mktemp("unrevivable"))


def test_unrevivable_saved_model_is_read_through_the_tf1_loader(unrevivable: ReferenceModel,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    import tensorflow as tf

    with pytest.raises(Exception) as caught:  # the situation: TF's own loader gives up
        tf.saved_model.load(str(unrevivable.path))
    if not _HAS_TF_KERAS:  # with it, the optimizer is revived and the loader fails a step later
        assert isinstance(caught.value, AttributeError) and "add_slot" in str(caught.value)
    outcome = run_cli(capsys, "inspect", unrevivable.path, "--json")
    assert outcome.code == 0, outcome.err
    report = json.loads(outcome.out)
    assert "cannot revive" in report["note"] and "TF1 loader" in report["note"]
    signature = {(e["key"], e["role"]): (e["tensor"], e["dtype"], e["shape"]) for e in report["signature"]["tensors"]}
    assert report["signature"]["name"] == "serving_default"
    assert signature[("audio", "input")] == ("serving_default_audio:0", "float32", [None, 6])
    assert {key for key, role in signature if role == "output"} == {"contour", "note", "onset"}
    assert all(value[1:] == ("float32", [None, 4]) for (key, role), value in signature.items() if role == "output")
    table = run_cli(capsys, "inspect", unrevivable.path)
    assert "Signature serving_default" in table.out and "onset" in table.out


def test_unrevivable_saved_model_freezes_by_signature_keys_and_passes(unrevivable: ReferenceModel, tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    from tests.ckpt2pb.test_freeze import _run_pb

    result = run_every_stage(capsys, unrevivable.path, tmp_path, "--outputs", "contour,note,onset",
                             "--inputs", "audio", "--batch", "2")
    assert result.verdict == "PASSED", result.compare.out + result.compare.err
    contract = result.contract
    document = json.loads(contract.path.read_text())
    assert [item["signature_key"] for item in document["outputs"]] == ["contour", "note", "onset"]
    assert [item["signature_key"] for item in document["inputs"]] == ["audio"]
    assert "(signature key onset)" in result.freeze.out
    assert contract.tf115_unknown_ops == {}  # the signature's function calls are inlined
    graph_def = _graph_def(contract.pb_path)
    assert not _all_ops(graph_def) & _CONTROL_AND_RANDOM and not graph_def.library.function
    names = [spec.name for spec in contract.outputs]
    got, placeholders = _run_pb(contract.pb_path.read_bytes(), {contract.inputs[0].name: unrevivable.feeds["audio"]},
                                names)
    assert placeholders == [contract.inputs[0].node]
    for key, value in zip(("contour", "note", "onset"), got, strict=True):
        np.testing.assert_allclose(value, unrevivable.expected[key], rtol=0, atol=1e-6, err_msg=key)
    # The keys name the tensors in the later stages too: dump-bin's --source, compare's --threshold.
    model_json = str(tmp_path / "model" / "model.json")
    dumped = run_cli(capsys, "dump-bin", "-m", model_json, "-o", str(tmp_path / "bins_by_key"),
                     "--source", "audio=random:0", "--samples", "3")
    assert dumped.code == 0, dumped.err
    strict = run_cli(capsys, "compare", model_json, "--input", str(tmp_path / "bins"), "--actual",
                     str(tmp_path / "out"), "--threshold", "onset:rmse=0")  # the stand-in is off in some digit
    assert strict.code == 1, strict.out + strict.err
    assert "signature keys: contour = StatefulPartitionedCall:0, note = StatefulPartitionedCall:1, " \
           "onset = StatefulPartitionedCall:2" in strict.out
    assert strict.verdict.startswith("FAILED: StatefulPartitionedCall:2 RootMeanSquareError ")


def test_pipeline_init_names_a_saved_model_by_its_signature_keys(unrevivable: ReferenceModel, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """`Identity_1` is never the only name a user sees: inspect ranks the signature's outputs first under their
    keys, and the file init writes names them by key, and runs as it is (but for the precision mode)."""
    from infer.pipeline.config import load_config

    inspected = run_cli(capsys, "inspect", unrevivable.path, "--json")
    assert inspected.code == 0, inspected.err
    candidates = json.loads(inspected.out)["output_candidates"]
    assert [(i["signature_key"], i["tensor"]) for i in json.loads(inspected.out)["inputs"]] == [
        ("audio", "serving_default_audio:0")]
    assert [(c["signature_key"], c["tensor"]) for c in candidates[:3]] == [
        ("contour", "StatefulPartitionedCall:0"), ("note", "StatefulPartitionedCall:1"),
        ("onset", "StatefulPartitionedCall:2")]
    table = run_cli(capsys, "inspect", unrevivable.path)
    assert re.search(r"1 +contour +StatefulPartitionedCall:0", table.out), table.out
    unnamed = run_cli(capsys, "freeze", unrevivable.path, "-o", str(tmp_path / "unnamed"))
    assert unnamed.code != 0 and "hint: likely outputs: contour, note, onset" in unnamed.err
    misspelt = run_cli(capsys, "freeze", unrevivable.path, "-o", str(tmp_path / "misspelt"), "--outputs", "onsets")
    assert "closest: onset" in misspelt.err
    np.save(tmp_path / "audio.npy", unrevivable.feeds["audio"])
    toml = tmp_path / "p.toml"
    outcome = run_cli(capsys, "pipeline", "init", unrevivable.path, "-o", str(toml),
                      "--data", str(tmp_path / "audio.npy"))
    assert outcome.code == 0, outcome.err
    config = load_config(toml)
    assert config.model.outputs == ("contour", "note", "onset") and config.model.freeze.inputs == ("audio",)
    assert "# Signature serving_default: audio = serving_default_audio:0 (input), contour = " \
           "StatefulPartitionedCall:0 (output)" in toml.read_text()
    toml.write_text(toml.read_text().replace('precision_mode = "force_fp16"', 'precision_mode = "force_fp32"'))
    ran = run_cli(capsys, "pipeline", "run", str(toml))
    assert ran.code == 0, ran.out + ran.err
    assert "likely outputs contour (StatefulPartitionedCall:0)" in ran.out and "PASSED" in ran.out.split()
    assert "onset (StatefulPartitionedCall:2) cosine" in ran.out
    document = json.loads((tmp_path / "work" / "model" / "model.json").read_text())
    assert [item["signature_key"] for item in document["outputs"]] == ["contour", "note", "onset"]


def test_a_saved_model_s_other_signatures_are_named_as_not_read(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    import tensorflow as tf

    class TwoHeads(tf.Module):
        def __init__(self) -> None:
            super().__init__()
            self.kernel = tf.Variable(np.ones((5, 3), np.float32))

        @tf.function(input_signature=[tf.TensorSpec([None, 5], tf.float32, name="wave")])
        def serve(self, wave: Any) -> Any:
            return {"pitch": tf.nn.softmax(tf.matmul(wave, self.kernel))}

        @tf.function(input_signature=[tf.TensorSpec([None, 5], tf.float32, name="wave")])
        def embed(self, wave: Any) -> Any:
            return {"embedding": tf.matmul(wave, self.kernel)}

    module = TwoHeads()
    tf.saved_model.save(module, str(tmp_path / "saved"), signatures={"serving_default": module.serve,
                                                                     "embed": module.embed})
    inspected = run_cli(capsys, "inspect", tmp_path / "saved", "--json")
    assert inspected.code == 0, inspected.err
    assert json.loads(inspected.out)["signature"]["others"] == ["embed"]
    table = run_cli(capsys, "inspect", tmp_path / "saved")
    assert "other signatures, not read (freeze takes serving_default): embed" in table.out


def test_revivable_saved_model_takes_signature_keys_too(tf2_saved_model: ReferenceModel, tmp_path: Path) -> None:
    from infer.freeze import FreezeOptions, freeze_model

    report = freeze_model(tf2_saved_model.path, tmp_path, FreezeOptions(outputs=("probs",), inputs=("x",), batch=2))
    assert [(s.name, report.contract.signature_keys[s.name]) for s in report.contract.outputs] == [
        ("probs:0", "probs")]
    assert report.contract.signature_keys["x:0"] == "x" and report.note == ""


# ---- 7. TF1 code on TF 2.x: infer with and without tf_keras ----



@pytest.mark.skipif(not _HAS_TF_KERAS, reason=_NO_TF_KERAS)
def test_tf1_layers_model_written_with_tf_keras_passes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.ckpt2pb.test_freeze import _run_pb

    folder = tmp_path / "legacy"
    folder.mkdir()
    subprocess.run([sys.executable, "-m", "tests.legacy_layers_model", str(folder)], check=True,
                   env={**os.environ, "TF_USE_LEGACY_KERAS": "1"}, capture_output=True)
    result = run_every_stage(capsys, folder / "model.ckpt", tmp_path, "--outputs", "probs:0", "--batch", "2")
    assert result.verdict == "PASSED", result.compare.out + result.compare.err
    ops = _all_ops(_graph_def(result.contract.pb_path))
    assert not ops & _CONTROL_AND_RANDOM and not {op for op in ops if "Random" in op}
    expected = np.load(folder / "expected.npz")
    got, _ = _run_pb(result.contract.pb_path.read_bytes(), {"images:0": expected["images"]}, ["probs:0"])
    np.testing.assert_allclose(got[0], expected["probs"], rtol=0, atol=1e-6)


@pytest.mark.parametrize("tf_keras", ["blocked", "importable"])
def test_infer_freezes_the_unrevivable_saved_model_with_and_without_tf_keras(
        unrevivable: ReferenceModel, tf_keras: str, tmp_path: Path) -> None:
    """In a fresh process, tf_keras made unimportable, or importable where it is installed: the freeze works."""
    if tf_keras == "importable" and not _HAS_TF_KERAS:
        pytest.skip(_NO_TF_KERAS)
    block = "sys.modules['tf_keras'] = None; " if tf_keras == "blocked" else ""
    code = (f"import sys; {block}from infer.cli.app import main; "
            f"main(['freeze', {str(unrevivable.path)!r}, '-o', {str(tmp_path / 'model')!r}, "
            "'--outputs', 'note,onset', '--batch', '2'])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    contract = json.loads((tmp_path / "model" / "model.json").read_text())
    assert [item["signature_key"] for item in contract["outputs"]] == ["note", "onset"]


def test_control_flow_left_in_the_graph_is_warned_about_and_recorded(tmp_path_factory: pytest.TempPathFactory,
                                                                      tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    model = build_data_cond(tmp_path_factory.mktemp("data_cond"))
    result = run_every_stage(capsys, model.path, tmp_path, "--outputs", "scores:0", "--batch", "2")
    assert result.verdict == "PASSED", result.compare.out + result.compare.err
    unknown = result.contract.tf115_unknown_ops
    assert set(unknown.values()) <= {"If", "StatelessIf"} and len(unknown) == 1, unknown
    (node, op), = unknown.items()
    assert f"warning: ops ATC's TensorFlow 1.15 parser does not know: {node} ({op})" in result.freeze.err
    assert json.loads(result.contract.path.read_text())["tf115_unknown_ops"] == unknown
    library = _graph_def(result.contract.pb_path).library.function
    assert len(library) == 2  # the If's two branches, and nothing the pruning could drop
    norms = [node for function in library for node in function.node_def if node.op == "FusedBatchNormV3"]
    assert len(norms) == 1 and "exponential_avg_factor" not in norms[0].attr  # stripped inside the branch too


def test_cond_predicate_folds_through_any_chain_of_ops(tmp_path: Path) -> None:
    """The predicate is the switch cast, negated, compared and combined with a default: TensorFlow computes it."""
    import tensorflow as tf

    from infer.freeze import FreezeOptions, freeze_model

    tf1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [None, 3], name="x")
        mode = tf1.placeholder(tf.int32, name="mode")  # shape-less, like the bool switch
        scale = tf1.placeholder_with_default(2.0, [], name="scale")
        predicate = tf.logical_and(tf.logical_not(tf.equal(tf.cast(mode, tf.float32) * scale, 2.0)),
                                   tf.reduce_all(tf.greater(tf.stack([scale, scale + 1.0]), 1.0)))
        tf.identity(tf.cond(predicate, lambda: x * 3.0, lambda: tf.nn.dropout(x, rate=0.5)), name="y")
    pb = tmp_path / "graph.pb"
    pb.write_bytes(graph.as_graph_def().SerializeToString())
    report = freeze_model(pb, tmp_path / "model", FreezeOptions(outputs=("y:0",), batch=2, assignments={"mode": "0"}))
    graph_def = _graph_def(report.contract.pb_path)
    assert not _all_ops(graph_def) & _CONTROL_AND_RANDOM
    assert report.contract.outputs[0].shape == (2, 3)
    from tests.ckpt2pb.test_freeze import _run_pb

    feed = np.arange(6, dtype=np.float32).reshape(2, 3)
    got, _ = _run_pb(report.contract.pb_path.read_bytes(), {"x:0": feed}, ["y:0"])
    np.testing.assert_array_equal(got[0], feed * 3.0)  # the live branch: mode 0 -> 0 != 2, and 2 > 1
