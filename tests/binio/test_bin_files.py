"""binio.bin_files: an input's files held as columns behave as the tuple of entries they stand for, and cost a few
bytes a file however many there are."""

from __future__ import annotations

import json
import tracemalloc
from array import array
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from binio.bin_files import BinFileColumns, BinFiles
from binio.errors import ManifestError
from binio.manifest import BinEntry, DatasetManifest, InputManifest, bin_file_name, load_manifest

_DIGESTS = st.text("0123456789abcdef", min_size=32, max_size=32)


def _entries(names: list[str], digests: list[str], rows: list[int]) -> tuple[BinEntry, ...]:
    return tuple(BinEntry(name=n, digest=d, rows=r) for n, d, r in zip(names, digests, rows, strict=False))


@pytest.mark.slow
@given(st.lists(st.tuples(st.booleans(), _DIGESTS, st.integers(0, 2**40)), max_size=12))
def test_columns_are_the_entries_they_were_made_of(files: list[tuple[bool, str, int]]) -> None:
    # dump-bin's names, or now and then another: the columns keep names only when they must
    names = [bin_file_name(i) if plain else f"x{i}.bin" for i, (plain, _, _) in enumerate(files)]
    entries = _entries(names, [d for _, d, _ in files], [r for _, _, r in files])
    held = BinFiles.of(entries)
    assert held == entries and entries == held and tuple(held) == entries and len(held) == len(entries)
    assert held.in_order == all(plain for plain, _, _ in files)
    assert [held.stem(i) for i in range(len(held))] == [Path(n).stem for n in names]
    if entries:
        assert held[-1] == entries[-1] and held[1:] == entries[1:] and held[::-1] == entries[::-1]
    with pytest.raises(IndexError):
        held[len(entries)]


def test_a_changed_entry_makes_them_unequal() -> None:
    entries = _entries([bin_file_name(i) for i in range(3)], ["a" * 32, "b" * 32, "c" * 32], [4, 4, 1])
    held = BinFiles.of(entries)
    assert held != (*entries[:2], BinEntry(name=entries[2].name, digest="d" * 32, rows=1))
    assert held != entries[:2] and held != BinFiles.of((*entries[:2], BinEntry("000002.bin", "c" * 32, 2)))
    assert held != BinFiles.of((*entries[:2], BinEntry("000009.bin", "c" * 32, 1)))


def test_an_input_manifest_holds_its_files_as_columns_and_writes_the_same_json(tmp_path: Path) -> None:
    entries = _entries([bin_file_name(i) for i in range(5)] , [f"{i:032x}" for i in range(5)], [2, 2, 2, 2, 1])
    item = InputManifest(tensor="x:0", folder="x", dtype="float32", shape=(2, 3), layout="ND", files=entries)
    assert isinstance(item.files, BinFiles)
    manifest = DatasetManifest(root=tmp_path, batch=2, samples=9, inputs=(item,)).save()
    written = json.loads((tmp_path / "dataset.json").read_text())
    assert written["inputs"][0]["files"] == [e.to_json() for e in entries] == manifest.to_json()["inputs"][0]["files"]
    (tmp_path / "x").mkdir()
    assert load_manifest(tmp_path) == manifest


def test_a_digest_that_is_not_hex_is_refused_when_read(tmp_path: Path) -> None:
    entries = _entries(["000000.bin"], ["0" * 32], [1])
    item = InputManifest(tensor="x:0", folder="x", dtype="float32", shape=(1, 3), layout="ND", files=entries)
    DatasetManifest(root=tmp_path, batch=1, samples=1, inputs=(item,)).save()
    (tmp_path / "x").mkdir()
    text = (tmp_path / "dataset.json").read_text()
    (tmp_path / "dataset.json").write_text(text.replace("0" * 32, "0" * 31 + "\u00e9"))
    with pytest.raises(ManifestError, match=r"inputs\[0\]\.files\[0\]\.xxh128: expected 32 lower-case hex digits, "
                                            "found '0+\u00e9'"):
        load_manifest(tmp_path)
    (tmp_path / "dataset.json").write_text(text.replace("0" * 32, "A" * 32))  # no file's digest is spelled so
    with pytest.raises(ManifestError, match=r"expected 32 lower-case hex digits, found 'A+'"):
        load_manifest(tmp_path)
    for digest in ("g" * 32, "A" * 32):
        with pytest.raises(ValueError, match="hex digits"):
            BinEntry(name="000000.bin", digest=digest, rows=1)


@pytest.mark.slow
def test_fifty_thousand_files_cost_a_few_bytes_each() -> None:
    """What a validation set at batch 1 holds per input (issue 42): 40 bytes a file, where entries were 230."""
    tracemalloc.start()
    try:
        columns = BinFileColumns()
        for index in range(50_000):
            columns.add(bin_file_name(index), f"{index:032x}", 1)
        held = columns.done()
        del columns  # the builder's own copy goes with it
        size = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert len(held) == 50_000 and held[49_999].digest == f"{49_999:032x}"
    assert size < 50 * 50_000, size


def _saved(tmp_path: Path, files: int = 3, **preprocessing: object) -> Path:
    entries = _entries([bin_file_name(i) for i in range(files)], [f"{i:032x}" for i in range(files)], [1] * files)
    item = InputManifest(tensor="x:0", folder="x", dtype="float32", shape=(1, 3), layout="ND", files=entries,
                         preprocessing=dict(preprocessing))
    DatasetManifest(root=tmp_path, batch=1, samples=files, inputs=(item,)).save()
    (tmp_path / "x").mkdir(exist_ok=True)
    return tmp_path / "dataset.json"


def test_an_object_shaped_as_a_file_entry_outside_the_files_is_read_as_the_object(tmp_path: Path) -> None:
    """The reader takes every object shaped as a file entry into its columns as it parses; one in a preprocessing
    record is given back as it was written."""
    shaped = {"name": "000000.bin", "xxh128": "0" * 32, "rows": 1}
    _saved(tmp_path, source=shaped, nested=[[shaped]])
    item = load_manifest(tmp_path).inputs[0]
    assert item.preprocessing == {"source": shaped, "nested": [[shaped]]} and len(item.files) == 3


def test_one_entry_that_is_not_as_dump_bin_writes_it_is_named_when_refused(tmp_path: Path) -> None:
    path = _saved(tmp_path)
    document = json.loads(path.read_text())
    document["inputs"][0]["files"][1]["rows"] = -1
    path.write_text(json.dumps(document))
    with pytest.raises(ManifestError, match=r"inputs\[0\]\.files\[1\]\.rows: expected 0 or more, found -1"):
        load_manifest(tmp_path)
    document["inputs"][0]["files"][1] = {"name": "000001.bin", "xxh128": "1" * 32, "rows": 1, "note": "kept"}
    path.write_text(json.dumps(document))  # an extra key: read one by one, and accepted as before
    assert [f.digest for f in load_manifest(tmp_path).inputs[0].files] == [f"{0:032x}", "1" * 32, f"{2:032x}"]


def test_stems_are_path_stems_and_indices_are_checked() -> None:
    """Files not named in order: each stem is Path.stem of its name (``.a`` stays ``.a``: two hidden names are two
    stems); every column read checks its index as a tuple does; in-order names given spelled out are in order."""
    entries = _entries([".a", ".b", "a", "a.", "x.y.bin"], [f"{i:032x}" for i in range(5)], [1] * 5)
    held = BinFiles.of(entries)
    assert [held.stem(i) for i in range(5)] == [Path(e.name).stem for e in entries] == [".a", ".b", "a", "a.", "x.y"]
    assert held.stem(-1) == "x.y" and held.digest(-5) == f"{0:032x}" and held.rows(-1) == 1
    for read in (held.name, held.stem, held.digest, held.rows, held.__getitem__):
        with pytest.raises(IndexError):
            read(5)
        with pytest.raises(IndexError):
            read(-6)
    plain = _entries([bin_file_name(i) for i in range(2)], ["a" * 32, "b" * 32], [1, 1])
    spelled = BinFiles(tuple(e.name for e in plain), bytes.fromhex("a" * 32 + "b" * 32), array("q", [1, 1]))
    assert spelled == BinFiles.of(plain) and spelled.in_order


def test_a_files_field_that_is_no_list_is_refused_by_what_it_is(tmp_path: Path) -> None:
    path = _saved(tmp_path)
    document = json.loads(path.read_text())
    document["inputs"][0]["files"] = {"name": "000000.bin", "xxh128": "0" * 32, "rows": 1}
    path.write_text(json.dumps(document))
    with pytest.raises(ManifestError, match=r"inputs\[0\]\.files: expected a list, found an object \{'name'"):
        load_manifest(tmp_path)
