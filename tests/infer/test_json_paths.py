"""Names read from dataset.json, run.json and model.json stay inside their folder; any malformed document is one
line, never a traceback, and never a file created, changed or deleted outside the output folder."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from binio.manifest import DatasetManifest
from infer.contract import ModelContract
from infer.run.layout import RUN_JSON
from tests.builders.bins import write_dataset
from tests.cli import run_cli
from tests.infer.run_data import cnn_batches


def _snapshot(root: Path, skip: Path) -> dict[str, tuple[str, str]]:
    """Every path under `root` but `skip`: its kind and (for a file) its content's sha256."""
    seen: dict[str, tuple[str, str]] = {}
    for parent, folders, files in os.walk(root):
        if Path(parent) == skip or skip in Path(parent).parents:
            continue
        for name in folders:
            path = Path(parent) / name
            if path == skip:
                continue
            seen[str(path)] = ("link" if path.is_symlink() else "dir", os.readlink(path) if path.is_symlink() else "")
        for name in files:
            path = Path(parent) / name
            if path.is_symlink():
                seen[str(path)] = ("link", os.readlink(path))
            else:
                seen[str(path)] = ("file", hashlib.sha256(path.read_bytes()).hexdigest())
    return seen


def _sandbox(root: Path, contract: ModelContract) -> tuple[Path, Path]:
    """root/victim.txt and root/victimdir/ (what must never change), root/work/{model,bins}; returns model, bins."""
    root.mkdir(parents=True)
    (root / "victim.txt").write_text("precious\n")
    (root / "victimdir").mkdir()
    (root / "victimdir" / "keep.bin").write_bytes(b"precious")
    work = root / "work"
    shutil.copytree(contract.folder, work / "model")
    write_dataset(work / "bins", {"images:0": cnn_batches(2)}, samples=3, layout="NHWC")
    return work / "model" / contract.path.name, work / "bins"


def _edit(path: Path, change: Any) -> None:
    document = json.loads(path.read_text())
    change(document)
    path.write_text(json.dumps(document))


@pytest.fixture
def sandbox(tmp_path: Path, onnx_small_cnn: ModelContract) -> tuple[Path, Path, Path]:
    model, bins = _sandbox(tmp_path / "box", onnx_small_cnn)
    return tmp_path / "box", model, bins


def test_a_dataset_folder_with_dotdot_never_exports_outside(sandbox: tuple[Path, Path, Path],
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    root, _, bins = sandbox
    _edit(bins / "dataset.json", lambda d: d["inputs"][0].__setitem__("folder", "../../elsewhere"))
    before = _snapshot(root, root / "out")
    result = run_cli(capsys, "bin-info", bins, "--to-npy", root / "out")
    assert result.code == 2
    assert result.error_line == (f"error: {bins / 'dataset.json'}: inputs[0].folder '../../elsewhere': '..' leaves "
                                 f"the folder")
    assert _snapshot(root, root / "out") == before and not (root / "elsewhere.npy").exists()


def test_a_file_entry_with_dotdot_never_overwrites_outside_with_devices(
        sandbox: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    root, model, bins = sandbox
    _edit(bins / "dataset.json", lambda d: d["inputs"][0]["files"][0].__setitem__("name", "../../../victim.txt"))
    result = run_cli(capsys, "run", model, "--input", bins, "-o", root / "out", "--devices", "0")
    assert result.code == 2
    assert result.error_line == (f"error: {bins / 'dataset.json'}: inputs[0].files[0].name '../../../victim.txt': "
                                 f"'..' leaves the folder")
    assert (root / "victim.txt").read_text() == "precious\n"


@pytest.mark.parametrize(("value", "why"), [
    ("../../../../victimdir", "'..' leaves the folder"),
    ("/tmp", "an absolute path, where a name inside the folder is meant"),
    ("a/b", "a path, where a bare name is meant"),
])
def test_a_hostile_folder_is_refused_before_any_shard_view(sandbox: tuple[Path, Path, Path], value: str, why: str,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    root, model, bins = sandbox
    _edit(bins / "dataset.json", lambda d: d["inputs"][0].__setitem__("folder", value))
    before = _snapshot(root, root / "out")
    result = run_cli(capsys, "run", model, "--input", bins, "-o", root / "out", "--devices", "0,1")
    assert result.code == 2
    assert result.error_line == f"error: {bins / 'dataset.json'}: inputs[0].folder {value!r}: {why}"
    assert _snapshot(root, root / "out") == before


def test_an_input_folder_that_links_out_of_the_dataset_is_refused(sandbox: tuple[Path, Path, Path],
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    root, _, bins = sandbox
    shutil.move(bins / "images", root / "moved")
    (bins / "images").symlink_to(root / "moved")
    result = run_cli(capsys, "bin-info", bins)
    assert result.code == 2
    assert result.error_line == (f"error: {bins / 'dataset.json'}: inputs[0].folder 'images': resolves to "
                                 f"{root / 'moved'}, outside {bins}")


@pytest.mark.parametrize(("entry", "value", "message"), [
    (("frozen", "pb"), "../model.pb", "frozen.pb '../model.pb': '..' leaves the folder"),
    (("frozen", "pb"), "/etc/passwd", "frozen.pb '/etc/passwd': an absolute path, where a name inside the folder "
                                      "is meant"),
    (("converted", "path"), "../../victim.txt", "converted.path '../../victim.txt': '..' leaves the folder"),
    (("frozen", "sha256"), 12, "frozen.sha256: expected a string, found a number 12"),
    (("inputs",), {"a": 1}, "inputs: expected a list, found an object {'a': 1}"),
])
def test_contract_entries_are_checked(sandbox: tuple[Path, Path, Path], entry: tuple[str, ...], value: Any,
                                      message: str, capsys: pytest.CaptureFixture[str]) -> None:
    root, model, bins = sandbox

    def change(document: dict[str, Any]) -> None:
        target = document
        for key in entry[:-1]:
            target = target[key]
        target[entry[-1]] = value

    _edit(model, change)
    result = run_cli(capsys, "run", model, "--input", bins, "-o", root / "out")
    assert result.code == 2
    assert result.error_line == f"error: {model}: {message}"
    assert not (root / "out").exists()


def test_a_run_json_stem_that_leaves_the_run_folder(sandbox: tuple[Path, Path, Path],
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    root, model, bins = sandbox
    assert run_cli(capsys, "run", model, "--input", bins, "-o", root / "out").code == 0
    (folder,) = (root / "out").iterdir()
    _edit(folder / RUN_JSON, lambda d: d["stems"].__setitem__(0, "../../victim"))
    result = run_cli(capsys, "compare", model, "--input", bins, "--actual", folder)
    assert result.code == 2
    assert result.error_line == f"error: {folder / RUN_JSON}: stems[0] '../../victim': '..' leaves the folder"


# --- generated: malformed documents of every kind ---------------------------------------------------------------

HOSTILE: st.SearchStrategy[Any] = st.one_of(
    st.sampled_from(["../../victim.txt", "../victimdir", "/etc/passwd", "a/b", "..", ".", "", "x\x00y", "\\x",
                     "images", "000000.bin", "float32", "float16", "NHWC", "../../../../victimdir/keep.bin"]),
    st.integers(min_value=-(2**70), max_value=2**70), st.sampled_from([10**12, 10**9, 0, -1, 2**63]),
    st.floats(allow_nan=True, allow_infinity=True), st.none(), st.booleans(),
    st.lists(st.integers(min_value=-3, max_value=10**12), max_size=4),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2), st.text(max_size=12),
)


def _locations(document: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(document, dict):
        for key, value in document.items():
            yield from _locations(value, (*prefix, key))
    elif isinstance(document, list):
        for index, value in enumerate(document):
            yield from _locations(value, (*prefix, index))


# Names that become paths, and values that try to leave their folder at every depth.
_NAMED = ("folder", "name", "pb", "path", "stems")
ESCAPES: st.SearchStrategy[str] = st.builds(
    lambda depth, tail, absolute: ("/" if absolute else "") + "../" * depth + tail,
    st.integers(min_value=0, max_value=8), st.sampled_from(["victim.txt", "victimdir", "victimdir/keep.bin", "new", "",
                                                            # back to real data, so that a read succeeds and a write
                                                            # lands outside
                                                            "images", "bins/images", "work/bins/images",
                                                            "images/000000.bin", "model/model.onnx"]), st.booleans())


def _equivalent_escape(value: str, base: Path, data: st.DataObject) -> str:
    """A name that reaches the same file as `value` inside `base`, but by leaving it: ``../bins/images`` for
    ``images``, or the absolute path. It reads real data, so what is written after it lands outside."""
    depth = data.draw(st.integers(min_value=0, max_value=4))
    if depth == 0:
        return str(base / value)
    ancestors = base.parts[-depth:]
    return "../" * depth + "/".join(ancestors) + "/" + value


def _mutate(document: Any, data: st.DataObject, base: Path) -> Any:
    """The document with 1-3 values replaced by hostile ones, or removed; half the time a name that becomes a path
    is given one that leaves its folder, often by a way back to the same file."""
    document = copy.deepcopy(document)
    for _ in range(data.draw(st.integers(min_value=1, max_value=3))):
        named = [p for p in _locations(document) if p and (p[-1] in _NAMED or (len(p) > 1 and p[-2] in _NAMED))]
        if bool(named) and data.draw(st.booleans()):  # bool(): with a list on the left, mypy types the draw as one
            place = data.draw(st.sampled_from(named))
            parent = document
            for key in place[:-1]:
                parent = parent[key]
            value = parent[place[-1]]
            folder = base
            if place[-1] == "name" and len(place) > 3 and isinstance(document["inputs"][place[1]].get("folder"), str):
                folder = base / document["inputs"][place[1]]["folder"]
            if isinstance(value, str) and data.draw(st.booleans()):
                parent[place[-1]] = _equivalent_escape(value, folder, data)
            else:
                parent[place[-1]] = data.draw(ESCAPES)
            continue
        places = [p for p in _locations(document) if p]
        if not places:
            return data.draw(HOSTILE)
        place = data.draw(st.sampled_from(places))
        parent = document
        for key in place[:-1]:
            parent = parent[key]
        if data.draw(st.booleans()) and isinstance(parent, dict):
            del parent[place[-1]]
        else:
            parent[place[-1]] = data.draw(HOSTILE)
    return document


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory, onnx_small_cnn: ModelContract) -> Path:
    root = tmp_path_factory.mktemp("pristine") / "box"
    _sandbox(root, onnx_small_cnn)
    np.save(root / "data.npy", np.zeros((3, 8, 8, 3), np.float32))
    return root


_COMMANDS = {
    "bin-info": lambda m, b, o: ("bin-info", b, "--verify", "--to-npy", o),
    "run": lambda m, b, o: ("run", m, "--input", b, "-o", o),
    "run-devices": lambda m, b, o: ("run", m, "--input", b, "-o", o, "--devices", "0"),
    "dump-bin": lambda m, b, o: ("dump-bin", "-m", m, "-o", o, b.parent.parent / "data.npy"),
}


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), which=st.sampled_from(["dataset.json", "model.json"]),
       command=st.sampled_from(sorted(_COMMANDS)))
def test_malformed_documents_never_give_a_traceback_nor_touch_anything_outside(
        pristine: Path, capsys: pytest.CaptureFixture[str], data: st.DataObject, which: str, command: str) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        # Deep enough that '..' chains from inside the output folder stay inside the scratch folder watched here.
        root = Path(scratch) / "a" / "b" / "c" / "box"
        shutil.copytree(pristine, root, symlinks=True)
        model, bins = root / "work" / "model" / "model.json", root / "work" / "bins"
        target = bins / "dataset.json" if which == "dataset.json" else model
        target.write_text(json.dumps(_mutate(json.loads(target.read_text()), data, target.parent)))
        out = root / "out"
        before = _snapshot(Path(scratch), out)
        result = run_cli(capsys, *_COMMANDS[command](model, bins, out))  # anything but InferError raises here
        assert result.code in (0, 1, 2), result.err
        if result.code == 2:
            assert result.error_line  # exactly one error line
        assert "Traceback" not in result.err
        assert _snapshot(Path(scratch), out) == before


@pytest.mark.slow
def test_a_manifest_of_every_hostile_kind_loads_or_is_refused_in_one_line(tmp_path: Path) -> None:
    """The loader alone, over many more documents than the end-to-end test can run."""
    from binio.errors import InferError
    from binio.manifest import load_manifest

    manifest: DatasetManifest = write_dataset(tmp_path / "bins", {"images:0": cnn_batches(2)}, samples=3)
    original = json.loads(manifest.path.read_text())

    @settings(max_examples=400, deadline=None)
    @given(data=st.data())
    def check(data: st.DataObject) -> None:
        manifest.path.write_text(json.dumps(_mutate(original, data, manifest.root)))
        try:
            loaded = load_manifest(manifest.root)
        except InferError as exc:
            assert "\n" not in exc.message and exc.message.startswith(str(manifest.path))
            return
        for item in loaded.inputs:
            for entry in item.files:
                assert loaded.file_path(item, entry).resolve().is_relative_to(manifest.root.resolve())

    check()
