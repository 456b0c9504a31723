"""`NameColumn` is the tuple of the same names, and a manifest holds its images' names as one; dataset.json is
written the same, byte for byte."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from binio.json_pieces import json_pieces, plain
from binio.manifest import BinEntry, DatasetManifest, InputManifest, bin_file_name, load_manifest
from binio.name_column import NameColumn


@given(st.lists(st.text(max_size=8), max_size=12))
def test_a_name_column_is_the_tuple_of_its_names(names: list[str]) -> None:
    column, plain_names = NameColumn(names), tuple(names)
    assert column == plain_names and plain_names == column and hash(column) == hash(plain_names)
    assert list(column) == names and column[1:4] == plain_names[1:4] and column[::-1] == plain_names[::-1]
    for k in range(-len(names), len(names)):
        assert column[k] == plain_names[k]
    assert "".join(json_pieces(column)) == json.dumps(names, indent=2) and plain(column) == names


def test_a_manifest_holds_its_images_names_as_a_column_and_writes_them_as_a_list(tmp_path: Path) -> None:
    names = [f"img_{i}.png" for i in range(500)]
    entries = tuple(BinEntry(name=bin_file_name(i), digest="0" * 32, rows=1) for i in range(500))
    item = InputManifest(tensor="x:0", folder="x", dtype="float32", shape=(1, 2), layout="ND", files=entries,
                         preprocessing={"order": "natural", "files": names})
    assert isinstance(item.preprocessing["files"], NameColumn) and item.preprocessing["files"] == names
    saved = DatasetManifest(root=tmp_path, batch=1, samples=500, inputs=(item,)).save()
    written = json.loads(saved.path.read_text())
    assert written["inputs"][0]["preprocessing"]["files"] == names
    assert saved.path.read_text().rstrip("\n") == json.dumps(saved.to_json(), indent=2)
    loaded = load_manifest(tmp_path)
    assert loaded == saved and isinstance(loaded.inputs[0].preprocessing["files"], NameColumn)
