"""The JSON documents the stages leave: a missing, corrupt, foreign or newer one is refused by name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from binio.document import load_document
from binio.errors import ManifestError
from binio.manifest import load_manifest


def _load(path: Path) -> dict[str, object]:
    return load_document(path, schema="infer.test", version=2, kind="test document", short="document",
                         error=ManifestError, missing="no such test document", missing_hint="write one")


@pytest.mark.parametrize(("text", "message"), [
    ('{"schema": "infer.test",\n "version": }', "not valid JSON (line 2, column 13: Expecting value)"),
    ('{"schema": "other", "version": 1}', "not an infer test document (expected schema 'infer.test')"),
    ('[1, 2]', "not an infer test document (expected schema 'infer.test')"),
    ('{"schema": "infer.test"}', "document has no integer 'version' (found None)"),
    ('{"schema": "infer.test", "version": true}', "document has no integer 'version' (found True)"),
    ('{"schema": "infer.test", "version": 3}', "document version 3 is newer than this infer reads (up to 2)"),
])
def test_a_bad_document_is_refused_by_name(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "doc.json"
    path.write_text(text)
    with pytest.raises(ManifestError) as caught:
        _load(path)
    assert str(caught.value) == f"{path}: {message}"


def test_a_good_document_and_a_missing_one(tmp_path: Path) -> None:
    path = tmp_path / "doc.json"
    with pytest.raises(ManifestError) as caught:
        _load(path)
    assert (str(caught.value), caught.value.hint) == (f"{path}: no such test document", "write one")
    path.write_text(json.dumps({"schema": "infer.test", "version": 2, "x": 1}))
    assert _load(path)["x"] == 1


def test_a_dataset_manifest_uses_it(tmp_path: Path) -> None:
    (tmp_path / "dataset.json").write_text('{"schema": "infer.dataset", "version": 9}')
    with pytest.raises(ManifestError) as caught:
        load_manifest(tmp_path)
    assert str(caught.value) == (f"{tmp_path / 'dataset.json'}: manifest version 9 is newer than this infer reads "
                                 "(up to 2)")


def test_a_binary_file_is_named_as_such(tmp_path: Path) -> None:
    (tmp_path / "dataset.json").write_bytes(b"\x80\xff\x00 not text")
    with pytest.raises(ManifestError) as caught:
        load_manifest(tmp_path)
    assert str(caught.value) == f"{tmp_path / 'dataset.json'}: not a dataset manifest (binary, not JSON text)"
