"""Input names become folder names that stay inside the dataset folder, whatever the tensor is called; what a
manifest derives from its files is derived once."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from binio.bin_files import BinFiles
from binio.manifest import BinEntry, DatasetManifest, InputManifest, bin_file_name, safe_folder_name


def test_folder_names_of_typical_tensors() -> None:
    assert [safe_folder_name(t) for t in ("images:0", "bert/input_ids:0", "IteratorGetNext:1", "../../etc:0",
                                          "..", "a b:c")] == ["images", "bert_input_ids", "IteratorGetNext",
                                                              "_.._etc", "input", "a_b_c"]


@pytest.mark.slow
@given(st.text(min_size=0, max_size=40))
def test_a_folder_name_is_never_a_path_nor_a_dot_name(tensor: str) -> None:
    folder = safe_folder_name(tensor)
    assert folder and "/" not in folder and "\\" not in folder and "\0" not in folder
    assert not folder.startswith(".")  # neither . nor .. nor a hidden folder


def test_file_names_sort_in_batch_order() -> None:
    names = [bin_file_name(i) for i in (0, 9, 10, 99, 100, 123456)]
    assert names[0] == "000000.bin" and names == sorted(names)


def _manifest_of(batches: int) -> DatasetManifest:
    entries = tuple(BinEntry(name=bin_file_name(i), digest="0" * 32, rows=1) for i in range(batches))
    item = InputManifest(tensor="x:0", folder="x", dtype="float32", shape=(1, 2), layout="ND", files=entries)
    return DatasetManifest(root=Path("/nonexistent"), batch=1, samples=batches, inputs=(item,))


def _manifest_named(names: list[str]) -> DatasetManifest:
    entries = tuple(BinEntry(name=name, digest="0" * 32, rows=1) for name in names)
    item = InputManifest(tensor="x:0", folder="x", dtype="float32", shape=(1, 2), layout="ND", files=entries)
    return DatasetManifest(root=Path("/nonexistent"), batch=1, samples=len(names), inputs=(item,))


def test_the_stems_are_derived_once_however_often_a_loop_over_the_batches_asks(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 42: `stems` rebuilt a Path per file on every access, and compare asked per batch: quadratic. Derived
    values are made once per manifest (a frozen one cannot change under them); files named otherwise than dump-bin
    names them are read for their stems once each."""
    made: list[int] = []
    stem_of = BinFiles.stem

    def counting_stem(files: BinFiles, index: int) -> str:
        made.append(index)
        return stem_of(files, index)

    monkeypatch.setattr(BinFiles, "stem", counting_stem)
    manifest = _manifest_named([f"batch_{i}.bin" for i in range(300)])
    for stem in manifest.stems:  # what a per-batch check does: ask the manifest inside a loop over its batches
        place = manifest.stems.place(stem)
        assert stem in manifest.stems and place is not None and manifest.stems[place] == stem
    assert len(made) == 300  # one per file, not one per file per batch
    assert manifest.stems[:2] == ("batch_0", "batch_1") and len(manifest.stems) == 300


def test_the_stems_of_files_dump_bin_named_are_held_as_their_count(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 42: 50,000 stems as strings, and a set of them, were held by every stage at batch 1; stems spelled as
    dump-bin spells them are read from their number, none made until asked for."""
    monkeypatch.setattr(BinFiles, "stem", lambda files, index: pytest.fail("a stem was made from the files"))
    manifest = _manifest_of(300)
    stems = manifest.stems
    assert stems.numbers == range(300) and "000299" in stems and "000300" not in stems and "00299" not in stems
    assert stems.place("000007") == 7 and stems[7] == "000007" and stems[-1] == "000299"
    assert stems[:2] == ("000000", "000001") and list(stems[298:]) == ["000298", "000299"]
    assert replace(manifest, samples=299).stems == manifest.stems  # a changed copy derives its own


def _saved_manifest(tmp_path: Path, batches: int) -> DatasetManifest:
    return replace(_manifest_of(batches), root=tmp_path).save()


def test_a_large_manifest_is_read_a_piece_of_text_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 42: dataset.json's whole text (7.5 MB at 50,000 batches) was the largest thing run and compare held;
    a manifest larger than a piece is parsed in pieces (`binio.json_stream`), to the same manifest."""
    import binio.document
    from binio.json_stream import PIECE
    from binio.manifest import load_manifest

    saved = _saved_manifest(tmp_path, 4_000)
    assert saved.path.stat().st_size > PIECE
    monkeypatch.setattr(binio.document, "parse_json", lambda *a, **k: pytest.fail("the whole text was parsed"))
    loaded = load_manifest(tmp_path)
    assert loaded == saved and loaded.inputs[0].files == saved.inputs[0].files


@pytest.mark.parametrize("damage", [lambda text: text[:-2], lambda text: text.replace('"rows": 1', '"rows": 1,', 1),
                                    lambda text: text.replace('"000007.bin"', '"00\\u00007.bin"')])
def test_a_large_damaged_manifest_is_refused_as_a_small_one_is(tmp_path: Path, damage: Any) -> None:
    """Text that is not a manifest is refused by the whole read's own message (line and column), whatever its size;
    what a failed streamed read took is dropped."""
    from binio.errors import ManifestError
    from binio.manifest import load_manifest

    path = _saved_manifest(tmp_path, 4_000).path
    path.write_text(damage(path.read_text()))
    with pytest.raises(ManifestError) as refused:
        load_manifest(tmp_path)
    assert "\n" not in refused.value.message and str(path) in refused.value.message
