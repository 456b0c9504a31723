"""A folder of existing ``.bin`` files as a source: checked (size always, sha256 when a manifest lists it), re-batched.

The folder is a dump-bin dataset (its ``dataset.json`` names dtype, shape and padding), one input folder inside
one, or bare bins with no manifest: then each file must hold whole samples of the model's input in its dtype.
"""

from __future__ import annotations

import bisect
import math
from pathlib import Path
from typing import Any

import numpy as np

from binio.binfile import check_bin_size, read_bin, sha256_file
from binio.dtypes import dtype
from binio.errors import BinFileError
from binio.manifest import MANIFEST_NAME, DatasetManifest, InputManifest, load_manifest
from binio.spec import TensorSpec, format_shape
from infer.sources.arrays import SourceError


class _BinPiece:
    def __init__(self, path: Path, spec: TensorSpec, rows: int, sha256: str | None) -> None:
        self.path = path
        self.spec = spec
        self.rows = rows
        self.sha256 = sha256


def has_bins(folder: Path) -> bool:
    return (folder / MANIFEST_NAME).is_file() or any(folder.glob("*.bin"))


def _pick_input(manifest: DatasetManifest, tensor: str, single_input: bool) -> InputManifest:
    for item in manifest.inputs:
        if tensor in (item.tensor, item.folder, item.tensor.rsplit(":", 1)[0]):
            return item
    if single_input and len(manifest.inputs) == 1:
        return manifest.inputs[0]
    names = ", ".join(i.tensor for i in manifest.inputs)
    raise SourceError(f"{manifest.path}: no input {tensor}; it holds: {names}")


class BinFolderSource:
    """Samples read back from bins, padding rows left out, so they can be cast and batched again."""

    def __init__(self, folder: Path, tensor: str, sample_shape: tuple[int, ...], dtype_name: str, *,
                 single_input: bool) -> None:
        self.folder = folder
        self._shape = sample_shape
        self._pieces: list[_BinPiece] = []
        self._manifest_source = ""
        manifest_path = folder / MANIFEST_NAME
        parent_manifest = folder.parent / MANIFEST_NAME
        if manifest_path.is_file():
            self._from_manifest(load_manifest(manifest_path), _pick_input(load_manifest(manifest_path), tensor,
                                                                          single_input))
        elif parent_manifest.is_file() and any(i.folder == folder.name for i in load_manifest(parent_manifest).inputs):
            manifest = load_manifest(parent_manifest)
            self._from_manifest(manifest, next(i for i in manifest.inputs if i.folder == folder.name))
        else:
            self._bare(sorted(folder.glob("*.bin")), dtype_name)
        self._starts = [0]
        for piece in self._pieces:
            self._starts.append(self._starts[-1] + piece.rows)
        self._verified: set[int] = set()

    def _from_manifest(self, manifest: DatasetManifest, item: InputManifest) -> None:
        self._manifest_source = item.source
        if tuple(item.shape[1:]) != self._shape:
            # Reported by the caller's shape check with the model's shape beside it.
            self._shape = tuple(item.shape[1:])
        for entry in item.files:
            path = manifest.file_path(item, entry)
            check_bin_size(path, item.spec)
            self._pieces.append(_BinPiece(path, item.spec, entry.rows, entry.sha256))

    def _bare(self, files: list[Path], dtype_name: str) -> None:
        if not files:
            raise SourceError(f"{self.folder}: no .bin files here")
        dt = dtype(dtype_name)
        sample_bytes = math.prod(self._shape) * dt.itemsize
        for path in files:
            size = path.stat().st_size
            if size == 0 or size % sample_bytes:
                raise BinFileError(
                    f"{path}: expected a multiple of {sample_bytes} bytes (samples of shape "
                    f"{format_shape(self._shape)} {dt.name}), got {size}",
                    hint="a folder without dataset.json is read in the model's input dtype",
                )
            rows = size // sample_bytes
            spec = TensorSpec(name=path.name, dtype=dt.name, shape=(rows, *self._shape))
            self._pieces.append(_BinPiece(path, spec, rows, None))

    @property
    def samples(self) -> int | None:
        return self._starts[-1]

    @property
    def sample_shape(self) -> tuple[int, ...]:
        return self._shape

    @property
    def description(self) -> str:
        return str(self.folder)

    @property
    def preprocessing(self) -> dict[str, Any]:
        found: dict[str, Any] = {"rebatched_from": str(self.folder), "files": len(self._pieces)}
        if self._manifest_source:
            found["original_source"] = self._manifest_source
        return found

    def _piece_rows(self, index: int) -> np.ndarray:
        piece = self._pieces[index]
        if piece.sha256 is not None and index not in self._verified:
            if sha256_file(piece.path) != piece.sha256:
                raise BinFileError(f"{piece.path}: sha256 differs from its dataset.json (the file changed)")
            self._verified.add(index)
        return read_bin(piece.path, piece.spec, mmap=True)[: piece.rows]

    def read(self, start: int, stop: int) -> np.ndarray:
        parts: list[np.ndarray] = []
        index = bisect.bisect_right(self._starts, start) - 1
        position = start
        while position < stop:
            rows = self._piece_rows(index)
            offset = position - self._starts[index]
            take = min(stop - position, rows.shape[0] - offset)
            parts.append(rows[offset:offset + take])
            position += take
            index += 1
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def close(self) -> None:
        pass
