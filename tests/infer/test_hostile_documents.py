"""Every document infer reads, generated hostile: a valid one with a value replaced (wrong types, numbers past 64
bits, NaN, nesting past any bound, names that leave their folder), a field removed or added, or bytes that are no
document at all. The property is the same for each reader: one ``error:`` line naming the file, exit code 2, or a
correct result; never a traceback, and never exit 0 (or a verdict) on a value it should have refused.

The documents read through a command are read through the command (dataset.json, model.json, run.json); those
only a library function reads at once (the pipeline file, its state, labels, AIPP configs, ATC's per-op files) are
read by that function, whose InferError the command line prints as that one line. The om and NPU dump readers have
their own such tests in tests/atc_wrap/test_ascend_hostile.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from binio.errors import InferError
from infer.contract import ModelContract
from tests.cli import run_cli
from tests.hostile import DEEP_JSON, HUGE_DIGITS, mutated, refusal_names, refused_or_read
from tests.infer.hostile_world import World, build_world

SLOW = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                       HealthCheck.too_slow])
FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, onnx_small_cnn: ModelContract) -> World:
    return build_world(tmp_path_factory.mktemp("hostile-documents"), onnx_small_cnn)


@pytest.fixture(scope="module")
def mine(world: World, tmp_path_factory: pytest.TempPathFactory) -> World:
    """A copy whose documents the examples overwrite one after another (each restores what it changed)."""
    return world.copy(tmp_path_factory.mktemp("hostile-documents-copy") / "world")


class Replaced:
    """`path` holding `data` for the body of a with, its own bytes again after it."""

    def __init__(self, path: Path, data: bytes) -> None:
        self.path, self.data, self.before = path, data, path.read_bytes()

    def __enter__(self) -> Path:
        self.path.write_bytes(self.data)
        return self.path

    def __exit__(self, *exc: object) -> None:
        self.path.write_bytes(self.before)


# --- through the commands -----------------------------------------------------------------------------------------

@pytest.mark.slow
@SLOW
@given(data=st.data())
def test_dataset_json(mine: World, data: st.DataObject, capsys: pytest.CaptureFixture[str]) -> None:
    document = json.loads(mine.manifest.read_text())
    with Replaced(mine.manifest, mutated(document, data)):
        outcome = run_cli(capsys, "bin-info", mine.bins)
    refused_or_read(outcome, mine.bins)  # the manifest, or a bin of its folder that does not fit it


@pytest.mark.slow
@SLOW
@given(data=st.data())
def test_model_json(mine: World, tmp_path_factory: pytest.TempPathFactory, data: st.DataObject,
                    capsys: pytest.CaptureFixture[str]) -> None:
    document = json.loads(mine.model.read_text())
    out = tmp_path_factory.mktemp("out")
    with Replaced(mine.model, mutated(document, data)):
        outcome = run_cli(capsys, "run", mine.model, "--input", mine.bins, "-o", out)
    refused_or_read(outcome, mine.model, mine.model.parent, mine.bins)


@pytest.mark.slow
@SLOW
@given(data=st.data())
def test_run_json(mine: World, data: st.DataObject, capsys: pytest.CaptureFixture[str]) -> None:
    document = json.loads(mine.run_json.read_text())
    with Replaced(mine.run_json, mutated(document, data)):
        outcome = run_cli(capsys, *mine.compare())
    # The unchanged world PASSES: a verdict that fails is a comparison of outputs read as something else.
    assert outcome.code != 1, outcome.out
    refused_or_read(outcome, mine.actual)


@pytest.mark.slow
def test_the_unchanged_world_passes(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(capsys, *world.compare("--labels", world.labels)).code == 0
    assert run_cli(capsys, "bin-info", world.bins).code == 0


# --- through the readers ------------------------------------------------------------------------------------------

def _read(path: Path, read: Any) -> Any:
    """What `read()` gives, or None where it refuses with one line naming `path` (exit code 2)."""
    try:
        return read()
    except InferError as refusal:
        assert refusal.exit_code == 2 and refusal_names(refusal.message, path), refusal.message
        return None


PIPELINE = """\
[model]
source = "missing.ckpt"
outputs = ["probs:0"]
batch = 8
set = { is_training = false }
[data]
source = "random:0"
[data.preprocessing]
scale = 0.5
[convert]
precision_mode = "force_fp16"
atc_args = ["--log=info"]
[run]
loop = 1
[compare]
topk = 5
labels = "labels.txt"
thresholds = { cosine = 0.99, "probs:0:kl" = 0.01 }
[paths]
work_dir = "work"
"""
TOML_VALUES = ["99999999999999999999", "-9223372036854775809", HUGE_DIGITS, "inf", "nan", "-inf", "1e400", "0",
               "-1", '"../../x"', '"/etc/passwd"', '"a/../../b"', '""', '"\\u0000"', "true", "[" * 70 + "]" * 70,
               "{ a = { b = { c = 1 } } }", '[1, "a"]', "1979-05-27T07:32:00Z", '"' + "a" * 5000 + '"',
               '{ "sample:" = 1 }', '{ ":cosine" = 1 }', '{ cosine = 1e400 }', '{ allclose = 150 }']


def _hostile_toml(data: st.DataObject) -> bytes:
    lines = PIPELINE.splitlines()
    kind = data.draw(st.sampled_from(["value", "value", "value", "key", "bytes", "deep"]))
    if kind == "deep":
        return ("[model]\nx = " + "[" * 100_000 + "]" * 100_000 + "\n").encode()
    if kind == "bytes":
        at = data.draw(st.integers(min_value=0, max_value=len(PIPELINE)))
        return PIPELINE[:at].encode() + data.draw(st.binary(min_size=1, max_size=8)) + PIPELINE[at:].encode()
    keyed = [i for i, line in enumerate(lines) if " = " in line]
    index = data.draw(st.sampled_from(keyed))
    key = lines[index].split(" = ", 1)[0]
    if kind == "key":
        key = data.draw(st.sampled_from(["workdir", "batch2", "source", "sample", '"a.b"']))
    lines[index] = f"{key} = {data.draw(st.sampled_from(TOML_VALUES))}"
    return ("\n".join(lines) + "\n").encode()


@pytest.mark.slow
@FAST
@given(data=st.data())
def test_the_pipeline_file(tmp_path: Path, data: st.DataObject) -> None:
    from infer.pipeline.config import load_config

    path = tmp_path / "pipeline.toml"
    path.write_bytes(_hostile_toml(data))
    config = _read(path, lambda: load_config(path))
    assert config is None  # its model is never there: a file read whole is refused for that, by name


@pytest.mark.slow
@FAST
@given(data=st.data())
def test_the_pipeline_state(tmp_path: Path, data: st.DataObject) -> None:
    """A state file it cannot trust means: run those stages again. Never an error, never a path outside."""
    from infer.pipeline._state import STATE_FILE, load_state

    outputs = {str(tmp_path / "model" / "model.pb"): "a" * 32}
    valid = {"schema": "infer.pipeline-state", "version": 2, "stages": {
        "freeze": {"settings": "s", "inputs": {"/x": "d"}, "outputs": outputs, "summary": "ok",
                   "facts": {"artefact": str(tmp_path / "model" / "model.om"), "atc_command": ["atc"]}}}}
    (tmp_path / STATE_FILE).write_bytes(mutated(valid, data))
    for record in load_state(tmp_path).values():
        assert all(Path(p).resolve().is_relative_to(tmp_path.resolve()) for p in record.outputs)
        assert isinstance(record.settings, str) and isinstance(record.summary, str)


@pytest.mark.slow
@FAST
@given(lines=st.lists(st.one_of(
    st.sampled_from(["0", "4", "-1", "+2", "99999999999999999999", HUGE_DIGITS, "1.5", "nan", "a.png 1", "b.png 2",
                     "c.png 3", "a.png 4", "٣", "1e3", "", "# 1", "x " * 1000 + "1"]),
    st.text(max_size=6)), max_size=5), raw=st.binary(max_size=12))
def test_a_labels_file(tmp_path: Path, lines: list[str], raw: bytes) -> None:
    from infer.compare._judge.labels import labels_for_samples

    path = tmp_path / "labels.txt"
    path.write_bytes("\n".join(lines).encode() + raw)
    labels = _read(path, lambda: labels_for_samples(path, 3, ("a.png", "b.png", "c.png")))
    if labels is not None:
        assert labels.dtype == np.int64 and labels.shape == (3,)


@FAST
@given(array=st.sampled_from([np.array([0, 1, 2]), np.array([0.0, 1.0, np.nan]), np.array([0.0, 1.0, np.inf]),
                              np.array([1e30, 0, 1]), np.array([2**64 - 1, 0, 1], np.uint64),
                              np.array(["a", "b", "c"]), np.zeros((3, 0)), np.array([0.5, 1, 2])]))
def test_a_labels_array(tmp_path: Path, array: np.ndarray) -> None:
    from infer.compare._judge.labels import labels_for_samples

    path = tmp_path / "labels.npy"
    np.save(path, array)
    labels = _read(path, lambda: labels_for_samples(path, 3, None))
    if labels is not None:
        assert labels.dtype == np.int64 and labels.shape == (3,) and labels.tolist() == array.tolist()


AIPP = """\
aipp_op {
    aipp_mode: static
    related_input_rank: 0
    input_format: RGB888_U8
    src_image_size_w: 64
    src_image_size_h: 64
    crop: true
    load_start_pos_w: 16
    load_start_pos_h: 16
    crop_size_w: 32
    crop_size_h: 32
    mean_chn_0: 0
    min_chn_0: 0.0
    var_reci_chn_0: 1.0
}
"""
AIPP_VALUES = ["99999", "-1", "99999999999999999999", HUGE_DIGITS, "1e400", "nan", "inf", '"x"', "true", "0",
               "YUV420SP_U8", "dynamic", "{ aipp_mode: static }", "0x7fffffff", "1.5"]


@pytest.mark.slow
@FAST
@given(data=st.data())
def test_an_aipp_config(tmp_path: Path, data: st.DataObject) -> None:
    from atc_wrap.aipp.parse import read_aipp_config

    lines = AIPP.splitlines()
    kind = data.draw(st.sampled_from(["value", "value", "bytes", "deep", "extra"]))
    if kind == "deep":
        text = ("aipp_op { " * 5000 + "}" * 5000).encode()
    elif kind == "bytes":
        text = AIPP.encode()[:data.draw(st.integers(0, len(AIPP)))] + data.draw(st.binary(min_size=1, max_size=6))
    else:
        index = data.draw(st.integers(min_value=1, max_value=len(lines) - 2))
        key = lines[index].split(":")[0].strip() if kind == "value" else data.draw(st.text(min_size=1, max_size=5))
        lines[index] = f"    {key}: {data.draw(st.sampled_from(AIPP_VALUES))}"
        text = ("\n".join(lines) + "\n").encode()
    path = tmp_path / "aipp.cfg"
    path.write_bytes(text)
    _read(path, lambda: read_aipp_config(path))


MIXLIST = {"black-list": {"to-add": ["Relu"], "to-remove": ["Sqrt"]}, "gray-list": {"to-add": ["Square"]}}


@pytest.mark.slow
@FAST
@given(data=st.data(), keep=st.lists(st.sampled_from(["Relu", "OpType::", "OpType::Relu", "a::b", "", "#", "\x00",
                                                      HUGE_DIGITS, "é"]), max_size=4),
       custom=st.lists(st.sampled_from(["conv::InputDtype:float16", "OpType::Relu:OutputDtype:float32",
                                        "conv::InputDtype:", "conv", "::", "conv::OutputDtype:int999",
                                        "conv::InputDtype:float16,InputDtype:float32"]), max_size=3),
       raw=st.binary(max_size=4))
def test_atcs_per_op_files(tmp_path: Path, data: st.DataObject, keep: list[str], custom: list[str],
                           raw: bytes) -> None:
    from atc_wrap.precision.op_controls import read_op_controls

    files = {"keep.cfg": "\n".join(keep).encode() + raw, "mix.json": mutated(MIXLIST, data),
             "custom.cfg": "\n".join(custom).encode()}
    for name, content in files.items():
        (tmp_path / name).write_bytes(content)
    try:
        read_op_controls(tmp_path / "keep.cfg", tmp_path / "mix.json", tmp_path / "custom.cfg")
    except InferError as refusal:
        assert refusal.exit_code == 2 and refusal_names(refusal.message, *(tmp_path / name for name in files))


@pytest.mark.parametrize("content", [DEEP_JSON.encode(), HUGE_DIGITS.encode(), b"\xff\xfe", b"[" * 70 + b"]" * 70])
def test_each_document_reader_refuses_what_is_no_document(world: World, tmp_path: Path, content: bytes) -> None:
    """The same few hostile files, given to each JSON reader by name."""
    from binio.manifest import load_manifest
    from infer.contract import load_contract
    from infer.run.record import load_run

    (tmp_path / "run").mkdir()
    for path, read in ((tmp_path / "dataset.json", lambda p: load_manifest(p)),
                       (tmp_path / "model.json", lambda p: load_contract(p)),
                       (tmp_path / "run" / "run.json", lambda p: load_run(p.parent))):
        path.write_bytes(content)
        assert _read(path, lambda: read(path)) is None  # noqa: B023 - called at once, in this iteration
