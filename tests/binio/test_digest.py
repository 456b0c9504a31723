"""Bin digests: dataset.json records each bin's XXH3-128 (version 2), and reads nothing else in its place."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from binio.binfile import write_bin
from binio.digest import digest_bytes, digest_file
from binio.errors import ManifestError
from binio.manifest import BinEntry, DatasetManifest, InputManifest, bin_file_name, load_manifest


def _manifest(root: Path, files: int = 2) -> DatasetManifest:
    entries = [BinEntry(bin_file_name(i), write_bin(root / "x" / bin_file_name(i), np.full((2, 3), i, np.float32)), 2)
               for i in range(files)]
    item = InputManifest(tensor="x:0", folder="x", dtype="float32", shape=(2, 3), layout="ND", files=tuple(entries))
    return DatasetManifest(root=root, batch=2, samples=2 * files, inputs=(item,)).save()


def test_known_values_of_both_digests(tmp_path: Path) -> None:
    # XXH3-128 of no bytes, as xxHash's own tests and `xxh128sum` give it; sha256 of no bytes.
    assert digest_bytes("xxh128", b"") == "99aa06d3014798d86001c324468d497f"
    assert digest_bytes("sha256", b"") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    data = np.random.default_rng(0).bytes(5 << 20)  # more than one read's chunk
    for size in (0, 1, 100, 5 << 20):  # the buffer is sized to the file: none, one byte, smaller than a chunk
        (tmp_path / "f.bin").write_bytes(data[:size])
        for algorithm in ("xxh128", "sha256"):
            assert digest_file(algorithm, tmp_path / "f.bin") == digest_bytes(algorithm, data[:size])
    with pytest.raises(ValueError, match="unknown digest 'md5'"):
        digest_bytes("md5", data)


def test_a_manifest_records_each_files_xxh128_and_version_2(tmp_path: Path) -> None:
    _manifest(tmp_path)
    document = json.loads((tmp_path / "dataset.json").read_text())
    assert document["version"] == 2
    first = tmp_path / "x" / "000000.bin"
    assert document["inputs"][0]["files"][0] == {"name": "000000.bin", "rows": 2,
                                                 "xxh128": digest_bytes("xxh128", first.read_bytes())}
    assert load_manifest(tmp_path).inputs[0].files[0].digest == digest_bytes("xxh128", first.read_bytes())


def test_a_file_entry_without_a_digest_is_refused_by_name(tmp_path: Path) -> None:
    _manifest(tmp_path)
    document = json.loads((tmp_path / "dataset.json").read_text())
    del document["inputs"][0]["files"][1]["xxh128"]
    (tmp_path / "dataset.json").write_text(json.dumps(document))
    with pytest.raises(ManifestError) as caught:
        load_manifest(tmp_path)
    assert str(caught.value).endswith("dataset.json: missing field 'inputs[0].files[1].xxh128'")


def test_a_digest_of_the_wrong_length_is_refused(tmp_path: Path) -> None:
    sha256 = digest_bytes("sha256", b"x")
    with pytest.raises(ValueError, match=r"000000\.bin: '[0-9a-f]{64}' is not a xxh128 digest \(32 hex digits\)"):
        BinEntry("000000.bin", sha256, 2)
    _manifest(tmp_path)
    document = json.loads((tmp_path / "dataset.json").read_text())
    document["inputs"][0]["files"][0]["xxh128"] = sha256
    (tmp_path / "dataset.json").write_text(json.dumps(document))
    with pytest.raises(ManifestError) as caught:
        load_manifest(tmp_path)
    assert str(caught.value).endswith("inputs[0].files[0].xxh128: expected 32 lower-case hex digits, found 64")
