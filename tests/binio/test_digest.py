"""Bin digests: dataset.json records XXH3-128 (version 2) and still reads the sha256 of version 1 manifests."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from binio.binfile import write_bin
from binio.dataset import open_dataset
from binio.digest import digest_bytes, digest_file
from binio.errors import BinFileError, ManifestError
from binio.manifest import BinEntry, DatasetManifest, InputManifest, bin_file_name, load_manifest


def _manifest(root: Path, files: int = 2) -> DatasetManifest:
    entries = [BinEntry(bin_file_name(i), write_bin(root / "x" / bin_file_name(i), np.full((2, 3), i, np.float32)), 2)
               for i in range(files)]
    item = InputManifest(tensor="x:0", folder="x", dtype="float32", shape=(2, 3), layout="ND", files=tuple(entries))
    return DatasetManifest(root=root, batch=2, samples=2 * files, inputs=(item,)).save()


def _as_version_1(root: Path) -> None:
    """Rewrites dataset.json as infer wrote it before version 2: every file's sha256."""
    document = json.loads((root / "dataset.json").read_text())
    document["version"] = 1
    for item in document["inputs"]:
        for entry in item["files"]:
            del entry["xxh128"]
            entry["sha256"] = hashlib.sha256((root / item["folder"] / entry["name"]).read_bytes()).hexdigest()
    (root / "dataset.json").write_text(json.dumps(document))


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
    assert load_manifest(tmp_path).inputs[0].files[0].algorithm == "xxh128"


def test_a_version_1_manifest_is_read_and_checked_by_its_sha256(tmp_path: Path) -> None:
    _manifest(tmp_path)
    _as_version_1(tmp_path)
    assert {e.algorithm for e in load_manifest(tmp_path).inputs[0].files} == {"sha256"}
    open_dataset(tmp_path, verify=True)
    changed = tmp_path / "x" / "000001.bin"
    changed.write_bytes(bytes(changed.stat().st_size))
    with pytest.raises(BinFileError) as caught:
        open_dataset(tmp_path, verify=True)
    assert str(caught.value) == f"{changed}: sha256 differs from dataset.json's (the file changed after dump-bin)"


def test_a_file_entry_without_a_digest_is_refused_by_name(tmp_path: Path) -> None:
    _manifest(tmp_path)
    document = json.loads((tmp_path / "dataset.json").read_text())
    del document["inputs"][0]["files"][1]["xxh128"]
    (tmp_path / "dataset.json").write_text(json.dumps(document))
    with pytest.raises(ManifestError) as caught:
        load_manifest(tmp_path)
    assert str(caught.value).endswith("inputs[0].files[1].xxh128: missing, and no sha256 either: a file's digest, "
                                      "to check it by")


def test_a_digest_of_the_wrong_length_is_refused(tmp_path: Path) -> None:
    sha256 = digest_bytes("sha256", b"x")
    with pytest.raises(ValueError, match=r"000000\.bin: '[0-9a-f]{64}' is not a xxh128 digest \(32 hex digits\)"):
        BinEntry("000000.bin", sha256, 2)  # code written for version 1, where the digest was a sha256
    assert BinEntry("000000.bin", sha256, 2, algorithm="sha256").digest == sha256
    _manifest(tmp_path)
    document = json.loads((tmp_path / "dataset.json").read_text())
    document["inputs"][0]["files"][0]["xxh128"] = sha256
    (tmp_path / "dataset.json").write_text(json.dumps(document))
    with pytest.raises(ManifestError) as caught:
        load_manifest(tmp_path)
    assert str(caught.value).endswith("inputs[0].files[0].xxh128: expected 32 hex digits, found 64")
