"""`--json` on every command that produces a result: one JSON document on stdout and nothing else, its top-level
keys exactly those docs/json-output.md lists for it (so the page cannot drift from what the commands print)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from binio.manifest import DatasetManifest
from infer.contract import ModelContract
from tests.builders.bins import write_dataset
from tests.cli import Arg, run_cli
from tests.infer.run_data import cnn_batches
from tests.models import BuiltModel

_DOC = Path(__file__).parent.parent / "docs" / "json-output.md"
_RESULT_COMMANDS = ("inspect", "freeze", "convert", "dump-bin", "bin-info", "run", "compare", "tune-precision",
                    "doctor")


def _documented() -> dict[str, tuple[set[str], set[str]]]:
    """Each `## infer COMMAND ... --json` section (keyed by the heading's text): its `| key |` table rows, those
    always printed and those marked optional."""
    keys: dict[str, tuple[set[str], set[str]]] = {}
    section = None
    for line in _DOC.read_text(encoding="utf-8").splitlines():
        heading = re.match(r"## `infer (.+ --json)`", line)
        if heading:
            section = heading.group(1)
            keys[section] = (set(), set())
        elif section is not None and (row := re.match(r"\| `([a-z_0-9]+)` \| (.*)\|$", line)):
            keys[section][1 if row.group(2).startswith("optional") else 0].add(row.group(1))
    return keys


def _documented_versions() -> dict[str, tuple[str, int]]:
    """Each section's `schema` and `version` (the first number of its cell: a cell may say what the last changed)."""
    found: dict[str, tuple[str, int]] = {}
    section, schema = None, ""
    for line in _DOC.read_text(encoding="utf-8").splitlines():
        heading = re.match(r"## `infer (.+ --json)`", line)
        if heading:
            section = heading.group(1)
        elif section is not None and (row := re.match(r"\| `schema` \| `([a-z.-]+)` \|", line)):
            schema = row.group(1)
        elif section is not None and (row := re.match(r"\| `version` \| (\d+)", line)):
            found[section] = (schema, int(row.group(1)))
    return found


def _agrees(document: dict[str, object], section: tuple[set[str], set[str]]) -> list[str]:
    always, optional = section
    return sorted((always - set(document)) | (set(document) - always - optional))


def test_every_result_command_takes_json_and_has_its_section(capsys: pytest.CaptureFixture[str]) -> None:
    documented = _documented()
    assert sorted({section.split()[0] for section in documented}) == sorted(_RESULT_COMMANDS)
    for command in _RESULT_COMMANDS:
        helped = run_cli(capsys, command, "--help")
        assert "--json" in helped.out, command


def _printed(capsys: pytest.CaptureFixture[str], *args: Arg, code: int = 0) -> dict[str, object]:
    outcome = run_cli(capsys, *args)
    assert outcome.code == code, outcome.out + outcome.err
    document = json.loads(outcome.out)  # stdout is the document alone
    assert isinstance(document, dict)
    return document


@pytest.mark.slow
def test_each_commands_json_has_the_documented_keys(small_cnn: BuiltModel, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    printed: dict[str, dict[str, object]] = {}
    printed["inspect"] = _printed(capsys, "inspect", small_cnn.prefix, "--json")
    printed["freeze"] = _printed(capsys, "freeze", small_cnn.prefix, "-o", tmp_path / "m", "--outputs",
                                 ",".join(small_cnn.outputs), "--batch", "2", "--json")
    contract = tmp_path / "m" / "model.json"
    printed["convert"] = _printed(capsys, "convert", contract, "--target", "onnx", "--json")
    printed["dump-bin"] = _printed(capsys, "dump-bin", "--model", contract, "--source", "images=random:5",
                                   "-o", tmp_path / "bins", "--json")
    printed["bin-info"] = _printed(capsys, "bin-info", tmp_path / "bins", "--json")
    printed["run"] = _printed(capsys, "run", contract, "--input", tmp_path / "bins", "-o", tmp_path / "out", "--json")
    printed["run --dry-run MODEL"] = _printed(capsys, "run", contract, "--input", tmp_path / "bins", "-o",
                                              tmp_path / "planned", "--dry-run", "--json")
    printed["compare"] = _printed(capsys, "compare", contract, "--input", tmp_path / "bins", "--actual",
                                  str(printed["run"]["folder"]), "--json")
    printed["doctor"] = _printed(capsys, "doctor", "--json")
    # tune-precision on a model that passes already: its first candidate is the model as it is
    printed["tune-precision"] = _printed(capsys, "tune-precision", contract, "--input", tmp_path / "bins", "-o",
                                         tmp_path / "tune", "--json", code=0)
    printed["inspect MODEL.json --precision"] = _printed(capsys, "inspect", contract, "--precision", "--json")
    sections = {section.split()[0] if section.split()[1].isupper() else section.removesuffix(" --json"): keys
                for section, keys in _documented().items()}
    versions = {section.split()[0] if section.split()[1].isupper() else section.removesuffix(" --json"): version
                for section, version in _documented_versions().items()}
    for command, document in printed.items():
        assert _agrees(document, sections[command]) == [], command
        if command in versions:  # a document with a schema: a key renamed or gone raises its version
            assert (document["schema"], document["version"]) == versions[command], command
    assert printed["compare"]["schema"] == "infer.compare-report" and printed["compare"]["passed"] is True
    assert printed["run"]["schema"] == "infer.run" and Path(str(printed["run"]["folder"])).is_dir()
    assert printed["convert"]["schema"] == "infer.convert-result"
    assert printed["run --dry-run MODEL"]["schema"] == "infer.run-plan" and not (tmp_path / "planned").exists()
    assert printed["tune-precision"]["schema"] == "infer.tune-precision"


def _ran_small_cnn(onnx_small_cnn: ModelContract, tmp_path: Path, capsys: pytest.CaptureFixture[str]
                   ) -> tuple[Path, DatasetManifest, dict[str, object]]:
    """A copy of the converted small CNN, two batches for it, and `run --json`'s document for them."""
    model = tmp_path / "model"
    shutil.copytree(onnx_small_cnn.folder, model)
    manifest = write_dataset(tmp_path / "bins", {"images:0": cnn_batches(2)})
    ran = _printed(capsys, "run", model / "model.json", "--input", manifest.root, "-o", tmp_path / "out", "--json")
    return model, manifest, ran


@pytest.mark.slow
def test_a_failing_compare_prints_its_document_and_exits_1(onnx_small_cnn: ModelContract, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    model, manifest, ran = _ran_small_cnn(onnx_small_cnn, tmp_path, capsys)
    document = _printed(capsys, "compare", model / "model.json", "--input", manifest.root, "--actual",
                        str(ran["folder"]), "--threshold", "rmse=0", "--json", code=1)
    assert document["passed"] is False and str(document["verdict_line"]).startswith("FAILED")


def test_an_om_inspected_as_json_has_the_documented_keys(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from binio.spec import TensorSpec
    from tests.infer.om_files import OmPlan, write_om

    om = write_om(tmp_path / "net.om", OmPlan([TensorSpec("images:0", "float32", (2, 8, 8, 3), "NHWC")],
                                              [TensorSpec("probs:0", "float32", (2, 5))]))
    document = _printed(capsys, "inspect", om, "--json")
    assert _agrees(document, _documented()["inspect MODEL.om --json"]) == []
    assert document["schema"] == "infer.model_om-inspect"


def _documented_layerwise() -> tuple[tuple[set[str], set[str]], tuple[set[str], set[str]]]:
    """compare's `layerwise.KEY` rows and its `layerwise.tensors[].KEY` rows: (always, optional) each."""
    found: tuple[tuple[set[str], set[str]], tuple[set[str], set[str]]] = ((set(), set()), (set(), set()))
    for line in _DOC.read_text(encoding="utf-8").splitlines():
        row = re.match(r"\| `layerwise\.(tensors\[\]\.)?([a-z_0-9]+)` \| (.*)\|$", line)
        if row:
            found[1 if row.group(1) else 0][1 if row.group(3).startswith("optional") else 0].add(row.group(2))
    return found


@pytest.mark.slow
def test_compares_layerwise_json_has_the_documented_keys(onnx_small_cnn: ModelContract, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    model, manifest, ran = _ran_small_cnn(onnx_small_cnn, tmp_path, capsys)
    document = _printed(capsys, "compare", model / "model.json", "--input", manifest.root, "--actual",
                        str(ran["folder"]), "--layerwise", "--json")
    layers = document["layerwise"]
    assert isinstance(layers, dict)
    section, rows = _documented_layerwise()
    assert _agrees(layers, section) == []
    for row in layers["tensors"]:
        assert _agrees(row, rows) == [], row["tensor"]
    assert layers["judged_by"] == "band" and layers["band"]["factor"] == 10.0
    compared = [row for row in layers["tensors"] if row["matched"]]
    assert compared and all(row["band"] is not None and row["band_excess"] is not None for row in compared)
