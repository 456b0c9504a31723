"""Reading a dataset folder: aligned batches of every input, sizes always checked, sha256 on request."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from binio.binfile import write_bin
from binio.dataset import iter_dataset, iter_samples, open_dataset
from binio.errors import BinFileError, ManifestError
from binio.manifest import BinEntry, DatasetManifest, InputManifest, bin_file_name


def _dataset(root: Path) -> tuple[DatasetManifest, np.ndarray, np.ndarray]:
    images = np.arange(5 * 3, dtype=np.float32).reshape(5, 3)
    ids = np.arange(5 * 2, dtype=np.int32).reshape(5, 2)
    inputs = []
    for tensor, folder, data in (("images:0", "images", images), ("ids:0", "ids", ids)):
        entries = []
        for index, start in enumerate(range(0, 5, 2)):
            buffer = np.zeros((2, *data.shape[1:]), data.dtype)
            rows = min(2, 5 - start)
            buffer[:rows] = data[start:start + rows]
            digest = write_bin(root / folder / bin_file_name(index), buffer)
            entries.append(BinEntry(bin_file_name(index), digest, rows))
        inputs.append(InputManifest(tensor=tensor, folder=folder, dtype=data.dtype.name, shape=(2, *data.shape[1:]),
                                    layout="ND", files=tuple(entries)))
    manifest = DatasetManifest(root=root, batch=2, samples=5, inputs=tuple(inputs)).save()
    return manifest, images, ids


def test_batches_are_aligned_across_inputs(tmp_path: Path) -> None:
    manifest, images, ids = _dataset(tmp_path)
    batches = list(iter_dataset(open_dataset(tmp_path, verify=True), verify=True))
    assert [b.stem for b in batches] == ["000000", "000001", "000002"]
    assert [b.rows for b in batches] == [2, 2, 1]
    np.testing.assert_array_equal(batches[1].arrays["images:0"], images[2:4])
    np.testing.assert_array_equal(batches[1].arrays["ids:0"], ids[2:4])
    np.testing.assert_array_equal(np.concatenate(list(iter_samples(manifest, "ids:0"))), ids)


def test_a_truncated_file_is_refused_with_its_size(tmp_path: Path) -> None:
    _dataset(tmp_path)
    target = tmp_path / "images" / "000001.bin"
    target.write_bytes(target.read_bytes()[:10])
    with pytest.raises(BinFileError) as caught:
        open_dataset(tmp_path)
    assert str(caught.value) == f"{target}: expected 24 bytes for shape (2,3) float32, got 10"


def test_a_changed_file_fails_only_the_sha_check(tmp_path: Path) -> None:
    _dataset(tmp_path)
    target = tmp_path / "ids" / "000000.bin"
    target.write_bytes(bytes(16))
    open_dataset(tmp_path)  # sizes still fit
    with pytest.raises(BinFileError, match=r"000000.bin: xxh128 differs from dataset.json's"):
        open_dataset(tmp_path, verify=True)


def test_inputs_with_different_files_are_refused(tmp_path: Path) -> None:
    manifest, _, _ = _dataset(tmp_path)
    shorter = manifest.inputs[1].__class__(**{**manifest.inputs[1].__dict__, "files": manifest.inputs[1].files[:2]})
    DatasetManifest(root=tmp_path, batch=2, samples=5, inputs=(manifest.inputs[0], shorter)).save()
    with pytest.raises(ManifestError) as caught:
        open_dataset(tmp_path)
    assert str(caught.value) == (f"{tmp_path / 'ids' / '000002.bin'}: missing, while images/000002.bin exists "
                                 "(file names must match across input folders)")


def test_an_input_is_found_by_tensor_node_or_folder_name(tmp_path: Path) -> None:
    manifest, _, _ = _dataset(tmp_path)
    ids = manifest.inputs[1]
    assert [manifest.find(name) for name in ("ids:0", "ids", "ids:1")] == [ids, ids, ids]
    assert manifest.find("images") is manifest.inputs[0] and manifest.find("labels:0") is None
    with pytest.raises(ManifestError) as caught:
        manifest.input("labels")
    assert str(caught.value) == f"{manifest.path}: no input 'labels'; it holds: images:0, ids:0"
