"""The design notes live in docs/ and stay true: links resolve, nothing cites notes outside the repository, and
the contract tables list exactly the keys the writers emit."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import infer
from infer.contract import ModelContract

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
CONTRACTS = DOCS / "contracts.md"


def test_every_page_the_index_names_exists_and_every_page_is_in_the_index() -> None:
    index = (DOCS / "README.md").read_text()
    linked = set(re.findall(r"\]\(([\w-]+\.md)\)", index))
    assert linked == {path.name for path in DOCS.glob("*.md")} - {"README.md"}


def test_no_source_cites_design_notes_outside_the_repository() -> None:
    citing = [path.relative_to(ROOT).as_posix()
              for folder in ("binio", "ckpt2pb", "atc_wrap", "infer", "tests", "benchmarks", "docs")
              for path in (ROOT / folder).rglob("*") if path.suffix in (".py", ".md")
              and path.name != Path(__file__).name and "DESIGN.md" in path.read_text(encoding="utf-8")]
    assert citing == []
    assert "DESIGN.md" not in (ROOT / "README.md").read_text()


def test_the_files_the_docs_name_exist() -> None:
    named = {name for page in DOCS.glob("*.md")
             for name in re.findall(r"`((?:binio|ckpt2pb|atc_wrap|infer|tests)/[\w/]+\.py)`", page.read_text())}
    assert named, "the docs name no source file"
    assert sorted(name for name in named if not (ROOT / name).is_file()) == []


def documented_keys(document: str) -> set[str]:
    """The top-level keys the first table of `document`'s section in contracts.md lists."""
    section = CONTRACTS.read_text().split(f"\n## {document}", 1)[1].split("\n## ", 1)[0]
    table = section.split("| key | meaning |", 1)[1].split("\n\n", 1)[0]
    keys: set[str] = set()
    for row in table.splitlines():
        first = row.split("|")[1] if row.startswith("|") else ""
        keys.update(name.split(".")[0].removesuffix("[]") for name in re.findall(r"`([\w.\[\]]+)`", first))
    return keys


def _top_keys(document: dict[str, Any]) -> set[str]:
    return set(document)


def test_model_json_keys_are_documented(onnx_small_cnn: ModelContract) -> None:
    written = onnx_small_cnn.to_json()
    assert documented_keys("model.json") == _top_keys(written)
    converted = CONTRACTS.read_text().split("\n`converted`:\n", 1)[1].split("\n## ", 1)[0]
    listed = {name.removesuffix("[]") for row in converted.splitlines() if row.startswith("| `")
              for name in re.findall(r"`([\w\[\]]+)`", row.split("|")[1])}
    assert listed == set(written["converted"])


def test_dataset_and_run_json_keys_are_documented(onnx_small_cnn: ModelContract, tmp_path: Path) -> None:
    dumped = infer.dump_bins(onnx_small_cnn, infer.DumpOptions(output=tmp_path / "bins", sources=(("", "const:1"),),
                                                               samples=3))
    assert documented_keys("dataset.json") == _top_keys(dumped.manifest.to_json())
    item_keys = set(dumped.manifest.to_json()["inputs"][0])
    section = CONTRACTS.read_text().split("\n`inputs[]`:\n", 1)[1].split("\n## ", 1)[0]
    listed = {name.removesuffix("[]") for row in section.splitlines() if row.startswith("| `")
              for name in re.findall(r"`([\w\[\]]+)`", row.split("|")[1])}
    assert listed == item_keys
    run = infer.run_model(onnx_small_cnn, dumped.manifest.root, tmp_path / "out")
    written = run.record.to_json()
    # scale_out: sharded runs only; dump: runs with --dump only (tests/infer/test_run_dump.py checks its keys);
    # gear: msame and ais_bench on a model with gears only (tests/infer/test_run_gears.py); remote: a run on an
    # Ascend host only (tests/infer/remote/test_over_ssh.py)
    assert documented_keys("run.json") - {"scale_out", "dump", "gear", "remote"} == _top_keys(written)


@pytest.mark.parametrize(("document", "schema", "version"), [
    ("model.json", "infer.model-contract", "1"), ("dataset.json", "infer.dataset", "2"),
    ("run.json", "infer.run", "1")])
def test_each_documents_schema_and_version_are_the_code_s(document: str, schema: str, version: str) -> None:
    from binio import manifest
    from infer import contract
    from infer.run import record as run_record  # the public module run.json is written by

    module = {"model.json": contract, "dataset.json": manifest, "run.json": run_record}[document]
    assert (module.SCHEMA, str(module.SCHEMA_VERSION)) == (schema, version)
    section = CONTRACTS.read_text().split(f"\n## {document}", 1)[1].split("\n## ", 1)[0]
    assert f"- schema `{schema}`, version {version}" in section
