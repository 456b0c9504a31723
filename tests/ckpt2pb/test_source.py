"""Every way a user names a model loads the same graph; every broken source is refused with one clear line."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ckpt2pb.errors import SourceError
from ckpt2pb.source import load_source
from infer.contract import ModelContract, load_contract
from infer.freeze import FreezeOptions, freeze_model
from tests.cli import run_cli
from tests.models import ReferenceModel


def _copy_checkpoint(model: ReferenceModel, folder: Path) -> Path:
    """The checkpoint's folder copied; returns the prefix in the copy."""
    shutil.copytree(model.path.parent, folder)
    return folder / model.path.name


@pytest.mark.parametrize("suffix", ["", ".index", ".meta", ".data-00000-of-00001"])
def test_prefix_or_any_of_its_files(resnet_model: ReferenceModel, suffix: str) -> None:
    source = load_source(f"{resnet_model.path}{suffix}")
    assert str(source.prefix) == str(resnet_model.path)
    assert source.kind == ("meta" if suffix == ".meta" else "checkpoint")
    assert source.tf_version and source.has_variables


def test_folder_uses_its_checkpoint_file(resnet_model: ReferenceModel) -> None:
    assert str(load_source(resnet_model.path.parent).prefix) == str(resnet_model.path)


def test_checkpoint_file_from_another_machine(resnet_model: ReferenceModel, tmp_path: Path) -> None:
    """The `checkpoint` file names absolute paths of the machine that trained; the folder and prefix still work."""
    prefix = _copy_checkpoint(resnet_model, tmp_path / "moved")
    (prefix.parent / "checkpoint").write_text(
        'model_checkpoint_path: "/home/someone/train/model.ckpt-1000"\n'
        'all_model_checkpoint_paths: "/home/someone/train/model.ckpt-1000"\n')
    assert str(load_source(prefix.parent).prefix) == str(prefix)
    assert str(load_source(prefix).prefix) == str(prefix)


@pytest.mark.slow
def test_stale_checkpoint_file_with_prefix_given(resnet_model: ReferenceModel, tmp_path: Path) -> None:
    """A `checkpoint` file naming a step that is gone does not matter when the prefix is given."""
    prefix = _copy_checkpoint(resnet_model, tmp_path / "stale")
    (prefix.parent / "checkpoint").write_text('model_checkpoint_path: "model.ckpt-99999"\n')
    report = freeze_model(prefix, tmp_path / "out", FreezeOptions(outputs=("probs",), batch=2))
    assert report.verification is not None and report.verification.worst == 0.0
    assert str(load_source(prefix.parent).prefix) == str(prefix)  # the folder: the checkpoint that is there


def _second_step(prefix: Path, step: str) -> Path:
    """Another checkpoint of the same graph beside `prefix` (its files copied under a new step)."""
    for path in prefix.parent.glob(f"{prefix.name}.*"):
        shutil.copy(path, prefix.parent / path.name.replace(prefix.name, f"model.ckpt-{step}"))
    return prefix.parent / f"model.ckpt-{step}"


def test_folder_with_two_checkpoints_and_no_checkpoint_file(resnet_model: ReferenceModel, tmp_path: Path) -> None:
    """Two steps and nothing saying which: refused (guessing could freeze the wrong one); the prefix works."""
    prefix = _copy_checkpoint(resnet_model, tmp_path / "two")
    later = _second_step(prefix, "2000")
    (prefix.parent / "checkpoint").unlink()
    with pytest.raises(SourceError) as caught:
        load_source(prefix.parent)
    assert str(caught.value) == (f"{prefix.parent}: holds 2 checkpoints (model.ckpt-1000, model.ckpt-2000) and no "
                                 "'checkpoint' file names one of them")
    assert caught.value.hint == f"give the prefix of the one to use, e.g. {later}"
    (prefix.parent / "checkpoint").write_text('model_checkpoint_path: "/elsewhere/model.ckpt-5000"\n')
    with pytest.raises(SourceError) as caught:
        load_source(prefix.parent)
    assert str(caught.value).endswith("and its 'checkpoint' file names model.ckpt-5000, which is not here")
    (prefix.parent / "checkpoint").write_text('model_checkpoint_path: "/elsewhere/model.ckpt-2000"\n')
    assert str(load_source(prefix.parent).prefix) == str(later)
    assert str(load_source(prefix).prefix) == str(prefix)


def test_folder_freeze_records_and_says_the_checkpoint_it_read(capsys: pytest.CaptureFixture[str],
                                                               resnet_model: ReferenceModel, tmp_path: Path) -> None:
    outcome = run_cli(capsys, "freeze", resnet_model.path.parent, "-o", tmp_path / "out", "--outputs", "probs",
                      "--batch", "2", "--no-verify")
    assert outcome.code == 0, outcome.err
    assert f"read checkpoint {resnet_model.path.resolve()}" in outcome.err.splitlines()
    assert load_contract(tmp_path / "out").source.path == str(resnet_model.path.resolve())


@pytest.mark.slow
def test_missing_data_file(capsys: pytest.CaptureFixture[str], resnet_model: ReferenceModel, tmp_path: Path) -> None:
    """Only the .index and .meta copied: the data is named missing, not called corrupt."""
    prefix = _copy_checkpoint(resnet_model, tmp_path / "nodata")
    Path(f"{prefix}.data-00000-of-00001").unlink()
    outcome = run_cli(capsys, "freeze", prefix, "-o", tmp_path / "out", "--outputs", "probs", "--batch", "2")
    assert outcome.code == 2
    assert outcome.error_line == (f"error: {prefix}: checkpoint data is missing (no model.ckpt-1000.data-*-of-* "
                                  "beside its .index)")
    assert not (tmp_path / "out").exists()
    Path(f"{prefix}.data-00001-of-00002").write_bytes(b"")  # one shard of two, the other one lost
    with pytest.raises(SourceError) as caught:
        freeze_model(prefix, tmp_path / "out", FreezeOptions(outputs=("probs",), batch=2))
    assert str(caught.value) == f"{prefix}: checkpoint data is missing model.ckpt-1000.data-00000-of-00002"


@pytest.mark.slow
def test_missing_index_beside_meta_and_data(capsys: pytest.CaptureFixture[str], resnet_model: ReferenceModel,
                                            tmp_path: Path) -> None:
    prefix = _copy_checkpoint(resnet_model, tmp_path / "noindex")
    Path(f"{prefix}.index").unlink()
    # The copied `checkpoint` file names the original's absolute path, which exists: the copy is still what is read.
    assert str(resnet_model.path) in (prefix.parent / "checkpoint").read_text()
    outcome = run_cli(capsys, "freeze", prefix.parent, "-o", tmp_path / "out", "--outputs", "probs", "--batch", "2")
    assert outcome.error_line == f"error: {prefix}: checkpoint index model.ckpt-1000.index is missing"
    outcome = run_cli(capsys, "inspect", prefix.parent)  # the graph alone is still worth inspecting
    assert outcome.code == 0, outcome.err
    assert "18 variables, 1,555 parameters (declared in the graph; no checkpoint holds their values)" in outcome.out


@pytest.mark.slow
def test_old_output_shapes_are_dropped(resnet_model: ReferenceModel, tmp_path: Path) -> None:
    """A meta graph whose `_output_shapes` disagree with what this TensorFlow infers still imports."""
    from tensorflow.core.protobuf import meta_graph_pb2

    prefix = _copy_checkpoint(resnet_model, tmp_path / "old")
    meta_path = Path(f"{prefix}.meta")
    meta = meta_graph_pb2.MetaGraphDef.FromString(meta_path.read_bytes())
    for node in meta.graph_def.node:
        shapes = node.attr["_output_shapes"].list.shape
        shapes.add().dim.add().size = 7  # one shape too many, of the wrong rank
    meta_path.write_bytes(meta.SerializeToString())
    source = load_source(prefix)
    assert not any("_output_shapes" in node.attr for node in source.graph_def.node)
    assert freeze_model(prefix, tmp_path / "out", FreezeOptions(outputs=("probs",), batch=2)).verification


def test_frozen_pb_is_a_source(frozen_small_cnn: ModelContract, tmp_path: Path) -> None:
    source = load_source(frozen_small_cnn.pb_path)
    assert source.kind == "pb" and source.prefix is None and not source.has_variables
    report = freeze_model(frozen_small_cnn.pb_path, tmp_path, FreezeOptions(outputs=("probs:0",)))
    assert report.contract.inputs == frozen_small_cnn.inputs


@pytest.mark.slow
def test_saved_model_and_keras_kinds(saved_model: ReferenceModel, keras_model: ReferenceModel) -> None:
    assert load_source(saved_model.path).kind == "saved_model"
    assert load_source(saved_model.path / "saved_model.pb").kind == "saved_model"
    keras = load_source(keras_model.path)
    assert keras.kind == "keras" and keras.tf_version.startswith("keras ")


def test_missing_prefix(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    outcome = run_cli(capsys, "freeze", tmp_path / "model.ckpt", "-o", tmp_path / "out", "--outputs", "probs")
    assert outcome.code == 2
    assert outcome.error_line == f"error: {tmp_path / 'model.ckpt'}: no such checkpoint or model file (looked " \
                                 "for model.ckpt, model.ckpt.index, model.ckpt.meta)"
    assert "hint:" not in outcome.err  # nothing nearby to point at
    assert not (tmp_path / "out").exists()


def test_prefix_without_its_step_points_at_the_checkpoints_there(resnet_model: ReferenceModel) -> None:
    with pytest.raises(SourceError) as caught:
        load_source(resnet_model.path.parent / "model.ckpt")
    assert caught.value.hint == f"{resnet_model.path.parent} holds model.ckpt-1000"


def test_misspelt_saved_model_folder_points_at_the_models_beside_it(saved_model: ReferenceModel,
                                                                    tmp_path: Path) -> None:
    shutil.copytree(saved_model.path, tmp_path / "export")
    (tmp_path / "frozen.pb").write_bytes(b"")
    with pytest.raises(SourceError) as caught:
        load_source(tmp_path / "exprot")
    assert caught.value.hint == f"{tmp_path} holds export/, frozen.pb"


def test_empty_folder(tmp_path: Path) -> None:
    with pytest.raises(SourceError) as caught:
        load_source(tmp_path)
    assert str(caught.value) == f"{tmp_path}: no checkpoint, SavedModel or model file in this folder"


def test_folder_above_the_model_points_one_level_down(saved_model: ReferenceModel, resnet_model: ReferenceModel,
                                                      tmp_path: Path) -> None:
    shutil.copytree(saved_model.path, tmp_path / "export" / "saved_model")
    _copy_checkpoint(resnet_model, tmp_path / "ckpt")
    (tmp_path / "logs").mkdir()
    with pytest.raises(SourceError) as caught:
        load_source(tmp_path)
    assert str(caught.value) == f"{tmp_path}: no checkpoint, SavedModel or model file in this folder"
    assert caught.value.hint == f"one level down: {tmp_path / 'ckpt'}"  # export/ is two levels above its model
    with pytest.raises(SourceError) as caught:
        load_source(tmp_path / "export")
    assert caught.value.hint == f"one level down: {tmp_path / 'export' / 'saved_model'}"


def test_keras_file_that_is_not_a_zip(tmp_path: Path) -> None:
    path = tmp_path / "model.keras"
    path.write_text("not a zip")
    with pytest.raises(SourceError) as caught:
        load_source(path)
    assert str(caught.value) == f"{path}: not a Keras .keras file (not a zip archive)"


def test_checkpoint_without_meta(resnet_model: ReferenceModel, tmp_path: Path) -> None:
    prefix = _copy_checkpoint(resnet_model, tmp_path / "nometa")
    Path(f"{prefix}.meta").unlink()
    with pytest.raises(SourceError) as caught:
        load_source(prefix)
    assert str(caught.value) == f"{prefix}: checkpoint has no graph (model.ckpt-1000.meta is missing)"


def _corrupt(path: Path) -> None:
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle:middle + 8] = b"XXXXXXXX"
    path.write_bytes(bytes(data))


def test_corrupt_index(capsys: pytest.CaptureFixture[str], resnet_model: ReferenceModel, tmp_path: Path) -> None:
    prefix = _copy_checkpoint(resnet_model, tmp_path / "bad_index")
    _corrupt(Path(f"{prefix}.index"))
    outcome = run_cli(capsys, "freeze", prefix, "-o", tmp_path / "out", "--outputs", "probs", "--batch", "2")
    assert outcome.code == 2
    assert outcome.error_line == f"error: {prefix}.index: not a readable checkpoint index (corrupt or truncated)"
    assert not (tmp_path / "out").exists()
    outcome = run_cli(capsys, "inspect", prefix)
    assert outcome.error_line == f"error: {prefix}.index: not a readable checkpoint index (corrupt or truncated)"


def test_corrupt_data(capsys: pytest.CaptureFixture[str], resnet_model: ReferenceModel, tmp_path: Path) -> None:
    prefix = _copy_checkpoint(resnet_model, tmp_path / "bad_data")
    _corrupt(Path(f"{prefix}.data-00000-of-00001"))
    outcome = run_cli(capsys, "freeze", prefix, "-o", tmp_path / "out", "--outputs", "probs", "--batch", "2")
    assert outcome.code == 2
    assert outcome.error_line == f"error: {prefix}: checkpoint data (.data-*) is corrupt or truncated"
    assert "hint: " in outcome.err and "Checksum" in outcome.err
    assert not (tmp_path / "out").exists()


def test_truncated_data(resnet_model: ReferenceModel, tmp_path: Path) -> None:
    prefix = _copy_checkpoint(resnet_model, tmp_path / "short_data")
    data = Path(f"{prefix}.data-00000-of-00001")
    data.write_bytes(data.read_bytes()[:100])
    with pytest.raises(SourceError) as caught:
        freeze_model(prefix, tmp_path / "out", FreezeOptions(outputs=("probs",), batch=2))
    assert str(caught.value) == f"{prefix}: checkpoint data (.data-*) is corrupt or truncated"


def test_garbage_pb(tmp_path: Path) -> None:
    pb = tmp_path / "model.pb"
    pb.write_bytes(b"\xff\xfe this is not a graph")
    with pytest.raises(SourceError) as caught:
        load_source(pb)
    assert str(caught.value) == f"{pb}: not a frozen GraphDef (starts with '\\xff\\xfe this is not a')"


def test_graph_this_tensorflow_cannot_import(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A custom op that is not loaded, or a node reading a tensor that is not there: one line, no traceback."""
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [2, 3], name="x")
        tf.identity(tf.nn.relu(x * 2.0, name="act"), name="y")
    graph_def = graph.as_graph_def()
    for node in graph_def.node:
        if node.name in ("mul", "act"):
            node.op = "ResamplerCustom"
    pb = tmp_path / "custom.pb"
    pb.write_bytes(graph_def.SerializeToString())
    outcome = run_cli(capsys, "inspect", pb)
    assert outcome.code == 2
    assert outcome.error_line == (f"error: {pb}: op types TensorFlow {tf.__version__} does not have: "
                                  "ResamplerCustom (mul and 1 more)")
    assert "hint: a custom op: load its library" in outcome.err
    graph_def = graph.as_graph_def()
    next(node for node in graph_def.node if node.name == "y").input[0] = "gone:0"
    pb.write_bytes(graph_def.SerializeToString())
    outcome = run_cli(capsys, "freeze", pb, "-o", tmp_path / "out", "--outputs", "y")
    assert outcome.error_line == f"error: {pb}: TensorFlow {tf.__version__} cannot import the graph"
    assert "gone" in outcome.err and "Traceback" not in outcome.err
    assert not (tmp_path / "out").exists()


def test_saved_model_without_its_variables(saved_model: ReferenceModel, tmp_path: Path) -> None:
    shutil.copytree(saved_model.path, tmp_path / "export")
    shutil.rmtree(tmp_path / "export" / "variables")
    with pytest.raises(SourceError) as caught:
        freeze_model(tmp_path / "export", tmp_path / "out", FreezeOptions(outputs=("scores",),
                                                                        inputs=("features[3,6]",)))
    assert str(caught.value) == f"{tmp_path / 'export'}: the graph has variables but no checkpoint holds their values"
    assert caught.value.hint == "its variables/ folder (variables.index, variables.data-*) is missing"


@pytest.mark.slow
def test_a_saved_model_without_serving_default_is_read_through_the_first_signature_by_name(tmp_path: Path) -> None:
    """TensorFlow lists the revived signatures in the order they were saved (zeta, alpha) and the meta graph's in
    its map's order (alpha, __saved_model_init_op, zeta): both loaders read the same one, the first by name."""
    import tensorflow as tf

    from ckpt2pb.source import _serving_meta_graph, _serving_signature

    class Two(tf.Module):
        def __init__(self) -> None:
            super().__init__()
            self.scale = tf.Variable(2.0)

        @tf.function(input_signature=[tf.TensorSpec([1, 3], tf.float32, name="x")])
        def zeta(self, x: tf.Tensor) -> dict[str, tf.Tensor]:
            return {"z": x * self.scale}

        @tf.function(input_signature=[tf.TensorSpec([1, 3], tf.float32, name="x")])
        def alpha(self, x: tf.Tensor) -> dict[str, tf.Tensor]:
            return {"a": x + self.scale}

    module = Two()
    folder = tmp_path / "two_signatures"
    tf.saved_model.save(module, str(folder), signatures={"zeta": module.zeta, "alpha": module.alpha})
    assert list(tf.saved_model.load(str(folder)).signatures) == ["zeta", "alpha"]  # the orders differ
    source = load_source(folder)
    assert (source.signature_name, source.other_signatures) == ("alpha", ("zeta",))
    assert [(s.key, s.role) for s in source.signature] == [("x", "input"), ("a", "output")]
    name, entries = _serving_signature(_serving_meta_graph(folder)[0])
    assert name == "alpha" and [(s.key, s.role) for s in entries] == [("x", "input"), ("a", "output")]
