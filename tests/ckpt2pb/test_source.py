"""Every way a user names a model loads the same graph; every broken source is refused with one clear line."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ckpt2pb.errors import SourceError
from ckpt2pb.source import load_source
from infer.freeze import freeze_model
from tests.cli import run_cli
from tests.models import ReferenceModel


def _copy_checkpoint(model: ReferenceModel, folder: Path) -> Path:
    """The checkpoint's folder copied; returns the prefix in the copy."""
    shutil.copytree(model.path.parent, folder)
    return folder / model.path.name


@pytest.mark.parametrize("suffix", ["", ".index", ".meta", ".data-00000-of-00001"])
def test_prefix_or_any_of_its_files(resnet_model: ReferenceModel, suffix: str) -> None:
    source = load_source(f"{resnet_model.path}{suffix}")
    assert source.prefix == resnet_model.path
    assert source.kind == ("meta" if suffix == ".meta" else "checkpoint")
    assert source.tf_version and source.has_variables


def test_folder_uses_its_checkpoint_file(resnet_model: ReferenceModel) -> None:
    assert load_source(resnet_model.path.parent).prefix == resnet_model.path


def test_checkpoint_file_from_another_machine(resnet_model: ReferenceModel, tmp_path: Path) -> None:
    """The `checkpoint` file names absolute paths of the machine that trained; the folder and prefix still work."""
    prefix = _copy_checkpoint(resnet_model, tmp_path / "moved")
    (prefix.parent / "checkpoint").write_text(
        'model_checkpoint_path: "/home/someone/train/model.ckpt-1000"\n'
        'all_model_checkpoint_paths: "/home/someone/train/model.ckpt-1000"\n')
    assert load_source(prefix.parent).prefix == prefix
    assert load_source(prefix).prefix == prefix


def test_stale_checkpoint_file_with_prefix_given(resnet_model: ReferenceModel, tmp_path: Path) -> None:
    """A `checkpoint` file naming a step that is gone does not matter when the prefix is given."""
    prefix = _copy_checkpoint(resnet_model, tmp_path / "stale")
    (prefix.parent / "checkpoint").write_text('model_checkpoint_path: "model.ckpt-99999"\n')
    report = freeze_model(prefix, tmp_path / "out", ["probs"], batch=2)
    assert report.verification is not None and report.verification.worst == 0.0
    assert load_source(prefix.parent).prefix == prefix  # the folder falls back to the checkpoint that is there


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
    assert freeze_model(prefix, tmp_path / "out", ["probs"], batch=2).verification


def test_frozen_pb_is_a_source(frozen_small_cnn, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    source = load_source(frozen_small_cnn.pb_path)
    assert source.kind == "pb" and source.prefix is None and not source.has_variables
    report = freeze_model(frozen_small_cnn.pb_path, tmp_path, ["probs:0"])
    assert report.contract.inputs == frozen_small_cnn.inputs


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
    assert not (tmp_path / "out").exists()


def test_empty_folder(tmp_path: Path) -> None:
    with pytest.raises(SourceError) as caught:
        load_source(tmp_path)
    assert str(caught.value) == f"{tmp_path}: no checkpoint, SavedModel or model file in this folder"


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
        freeze_model(prefix, tmp_path / "out", ["probs"], batch=2)
    assert str(caught.value) == f"{prefix}: checkpoint data (.data-*) is corrupt or truncated"


def test_garbage_pb(tmp_path: Path) -> None:
    pb = tmp_path / "model.pb"
    pb.write_bytes(b"\xff\xfe this is not a graph")
    with pytest.raises(SourceError) as caught:
        load_source(pb)
    assert str(caught.value) == f"{pb}: not a frozen GraphDef (the protobuf does not parse)"
