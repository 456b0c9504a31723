"""Hostile input, round three, what ended in a traceback or in exit 0 on wrong output: an AIPP config infer wrote
that ATC refuses, documents nested a hundred thousand deep, bytes that are not UTF-8, integers past 64 bits, a full
disk under the lock file. Each is one ``error:`` line naming the file now, exit code 2."""

from __future__ import annotations

import errno
import json
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from binio.errors import InferError
from infer.contract import ModelContract
from tests.cli import run_cli
from tests.hostile import DEEP_JSON
from tests.infer.hostile_world import World, build_world


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, onnx_small_cnn: ModelContract) -> World:
    return build_world(tmp_path_factory.mktemp("hostile-bad"), onnx_small_cnn)


@pytest.fixture
def mine(world: World, tmp_path: Path) -> World:
    """A copy of the world this test may change."""
    return world.copy(tmp_path / "world")


# --- 1. what infer generates passes the checks a hand-written file passes ----------------------------------------

def test_a_generated_aipp_config_outside_atcs_range_is_refused_and_nothing_is_written(
        frozen_small_cnn: ModelContract, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copytree(frozen_small_cnn.folder, tmp_path / "model")
    model = tmp_path / "model" / "model.json"
    before = model.read_bytes()
    result = run_cli(capsys, "convert", model, "--target", "onnx", "--aipp", "--aipp-src-size", "99999,99999")
    assert result.code == 2
    assert result.error_line == ("error: --aipp: the aipp.cfg these settings make would be refused: aipp.cfg:5: "
                                 "src_image_size_w 99999: outside ATC's documented range [2, 4096] (or 0)")
    assert not (tmp_path / "model" / "aipp.cfg").exists() and model.read_bytes() == before


# --- 2. nesting a hundred thousand deep, in every reader ----------------------------------------------------------

def _deep(path: Path) -> Path:
    path.write_text(DEEP_JSON)
    return path


def test_a_deep_dataset_json(mine: World, capsys: pytest.CaptureFixture[str]) -> None:
    _deep(mine.manifest)
    result = run_cli(capsys, "bin-info", mine.bins)
    assert (result.code, result.error_line) == (2, f"error: {mine.manifest}: nested more than 64 levels deep; not a "
                                                   "dataset manifest")


def test_a_deep_model_json(mine: World, capsys: pytest.CaptureFixture[str]) -> None:
    _deep(mine.model)
    result = run_cli(capsys, "run", mine.model, "--input", mine.bins, "-o", mine.root / "out")
    assert (result.code, result.error_line) == (2, f"error: {mine.model}: nested more than 64 levels deep; not a "
                                                   "model contract")


def test_a_deep_run_json(mine: World, capsys: pytest.CaptureFixture[str]) -> None:
    _deep(mine.run_json)
    result = run_cli(capsys, *mine.compare())
    assert (result.code, result.error_line) == (2, f"error: {mine.run_json}: nested more than 64 levels deep; not a "
                                                   "run record")


def test_a_deep_modify_mixlist(mine: World, capsys: pytest.CaptureFixture[str]) -> None:
    mixlist = _deep(mine.root / "mix.json")
    result = run_cli(capsys, "convert", mine.model, "--target", "onnx", "--precision-mode", "allow_mix_precision",
                     "--modify-mixlist", mixlist)
    assert (result.code, result.error_line) == (2, f"error: --modify-mixlist {mixlist}: nested more than 64 levels "
                                                   "deep; not a modify_mixlist JSON file")


def _pipeline(folder: Path, text: str = "") -> Path:
    """A pipeline file whose model is not there: every run ends at reading it (no stage starts)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "pipeline.toml"
    path.write_text('[model]\nsource = "missing.ckpt"\noutputs = ["probs:0"]\n[data]\nsource = "random:0"\n' + text)
    return path


def test_a_deep_pipeline_toml(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _pipeline(tmp_path, "[convert]\natc_args = " + "[" * 100_000 + "]" * 100_000 + "\n")
    result = run_cli(capsys, "pipeline", "run", path)
    assert (result.code, result.error_line) == (2, f"error: {path}: nested more than 64 levels deep; not a pipeline "
                                                   "file")


def test_a_deep_pipeline_state_runs_everything_again(tmp_path: Path) -> None:
    from infer.pipeline._state import STATE_FILE, load_state

    _deep(tmp_path / STATE_FILE)
    assert load_state(tmp_path) == {}  # a state file it cannot trust: every stage runs again


# --- 3. bytes that are not UTF-8 ----------------------------------------------------------------------------------

def test_a_labels_file_that_is_not_utf8(mine: World, capsys: pytest.CaptureFixture[str]) -> None:
    mine.labels.write_bytes(b"0\n1\xff\n2\n")
    result = run_cli(capsys, *mine.compare("--labels", mine.labels))
    assert (result.code, result.error_line) == (2, f"error: {mine.labels}: line 2, column 2: byte 0xff is not UTF-8; "
                                                   "expected a labels file as UTF-8 text")


def test_a_pipeline_toml_with_a_byte_that_is_not_utf8_in_a_comment(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    path = _pipeline(tmp_path)
    path.write_bytes(b"# caf\xe9\n" + path.read_bytes())
    result = run_cli(capsys, "pipeline", "run", path)
    assert (result.code, result.error_line) == (2, f"error: {path}: line 1, column 6: byte 0xe9 is not UTF-8; "
                                                   "expected a pipeline .toml file as UTF-8 text")


# --- 4. integers past 64 bits -------------------------------------------------------------------------------------

def test_a_label_past_64_bits(mine: World, capsys: pytest.CaptureFixture[str]) -> None:
    mine.labels.write_text("0\n99999999999999999999\n2\n")
    result = run_cli(capsys, *mine.compare("--labels", mine.labels))
    assert (result.code, result.error_line) == (2, f"error: {mine.labels}:2: label 99999999999999999999: expected a "
                                                   "class index of 64 bits at most")


def test_a_batch_past_64_bits_in_the_pipeline_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _pipeline(tmp_path)
    path.write_text(path.read_text().replace("[data]", "batch = 99999999999999999999\n[data]"))
    result = run_cli(capsys, "pipeline", "run", path)
    assert (result.code, result.error_line) == (2, f"error: {path}: [model] batch: expected an integer of 64 bits at "
                                                   "most, got 99999999999999999999")


@pytest.mark.parametrize(("entry", "value"), [("batch", 2**64), ("samples", 2**64)])
def test_a_dataset_count_past_64_bits(mine: World, entry: str, value: int, capsys: pytest.CaptureFixture[str]) -> None:
    document = json.loads(mine.manifest.read_text())
    document[entry] = value
    mine.manifest.write_text(json.dumps(document))
    result = run_cli(capsys, "bin-info", mine.bins)
    assert result.code == 2
    assert result.error_line.startswith(f"error: {mine.manifest}: {entry}: expected ")


# --- 5. a full disk under the lock file ---------------------------------------------------------------------------

def test_a_full_disk_while_the_lock_file_is_written(mine: World, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    real = os.pwrite

    def full(fd: int, data: bytes, offset: int) -> int:
        if os.readlink(f"/proc/self/fd/{fd}").endswith(".infer.lock"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(fd, data, offset)

    monkeypatch.setattr(os, "pwrite", full)
    out = mine.root / "out"
    result = run_cli(capsys, "run", mine.model, "--input", mine.bins, "-o", out)
    assert (result.code, result.error_line) == (2, f"error: {out / '.infer.lock'}: cannot write the lock file (No "
                                                   "space left on device)")
    assert not out.exists()  # the folder it created for the run is gone with its lock


# --- the one catch: what a reader leaves unrefused still names its file --------------------------------------------

def test_what_a_reader_leaves_unrefused_is_one_line_naming_its_file(mine: World, monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    import infer.compare._judge.labels as labels

    def regressed(path: Path, text: str) -> None:
        raise ValueError("a check this reader forgot")

    monkeypatch.setattr(labels, "_text_labels", regressed)
    result = run_cli(capsys, *mine.compare("--labels", mine.labels))
    assert (result.code, result.error_line) == (2, f"error: {mine.labels}: cannot be read: unexpected content "
                                                   "(ValueError: a check this reader forgot)")


def test_an_os_error_naming_its_file_is_one_line(mine: World, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    import binio.document

    def failing_disk(text: str, *, named: str, **kwargs: object) -> None:
        raise OSError(errno.EIO, os.strerror(errno.EIO), named)

    monkeypatch.setattr(binio.document, "parse_json", failing_disk)
    result = run_cli(capsys, "bin-info", mine.bins)
    assert (result.code, result.error_line) == (2, f"error: {mine.manifest}: Input/output error")


def test_anything_else_is_a_bug_and_keeps_its_traceback(mine: World, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    import infer.bin_info

    def bug(*args: object, **kwargs: object) -> None:
        raise ValueError("a bug, not a file's content")

    monkeypatch.setattr(infer.bin_info, "describe_path", bug, raising=False)
    with pytest.raises(ValueError, match="a bug, not a file's content"):
        run_cli(capsys, "bin-info", mine.bins)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(src=st.one_of(st.none(), st.tuples(st.integers(0, 10**6), st.integers(0, 10**6))),
       crop=st.one_of(st.none(), st.tuples(st.integers(0, 10**5), st.integers(0, 10**5))),
       scale=st.floats(min_value=1e-9, max_value=1e9), mean=st.floats(min_value=-1e6, max_value=1e6),
       std=st.floats(min_value=1e-9, max_value=1e9),
       input_format=st.sampled_from(["", "RGB888_U8", "YUV420SP_U8", "XRGB8888_U8"]))
def test_every_aipp_config_infer_generates_passes_the_checks_a_written_one_passes(
        frozen_small_cnn: ModelContract, src: tuple[int, int] | None, crop: tuple[int, int] | None, scale: float,
        mean: float, std: float, input_format: str) -> None:
    from atc_wrap.aipp.parse import parse_aipp_text
    from infer.model_aipp.config import aipp_config_for
    from infer.model_aipp.options import AippOptions
    from infer.preprocessing import ImageOptions

    options = AippOptions(preprocessing=ImageOptions(scale=scale, mean=(mean,), std=(std,)),
                          input_format=input_format, src_size=src, crop=crop)
    try:
        config = aipp_config_for(frozen_small_cnn, options)
    except InferError as refusal:
        assert "\n" not in refusal.message
        return
    parse_aipp_text(config.to_prototxt(), Path("generated.cfg"))  # what infer writes, read as ATC would
