"""A folder of existing ``.bin`` files as a source: checked (size always, digest when a manifest lists it), re-batched.

The folder is a dump-bin dataset (its ``dataset.json`` names dtype, shape and padding), one input folder inside
one, or bare bins with no manifest: then each file must hold whole samples of the model's input in its dtype.
"""

from __future__ import annotations

import bisect
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from binio.binfile import check_bin_size, read_bin
from binio.dataset import check_digest
from binio.dtypes import dtype
from binio.errors import BinFileError
from binio.manifest import MANIFEST_NAME, BinEntry, DatasetManifest, InputManifest, load_manifest, parent_input
from binio.spec import TensorSpec, format_shape
from infer.dump_bin._sources.order import NATURAL_ORDER, natural_order
from infer.dump_bin.errors import SourceError


@dataclass(frozen=True)
class _BinPiece:
    """One file's real rows; a file listed in a manifest has its digest checked when first read."""

    path: Path
    spec: TensorSpec
    rows: int
    entry: BinEntry | None = None
    manifest_path: Path | None = None


def has_bins(folder: Path) -> bool:
    if (folder / MANIFEST_NAME).is_file():
        return True
    with os.scandir(folder) as entries:  # names only: a folder of 50,000 images is no 50,000 Paths
        return any(entry.name.endswith(".bin") for entry in entries)


def _pick_input(manifest: DatasetManifest, tensor: str, single_input: bool) -> InputManifest:
    """The dataset's input for `tensor`; a one-input dataset feeds a one-input model whatever the names."""
    if manifest.find(tensor) is None and single_input and len(manifest.inputs) == 1:
        return manifest.inputs[0]
    return manifest.input(tensor)


class BinFolderSource:
    """Samples read back from bins, padding rows left out, so they can be cast and batched again."""

    def __init__(self, folder: Path, tensor: str, sample_shape: tuple[int, ...], dtype_name: str, *,
                 single_input: bool) -> None:
        self.folder = folder
        self._shape = sample_shape
        self._pieces: list[_BinPiece] = []
        self._manifest_source = ""
        if (folder / MANIFEST_NAME).is_file():
            manifest = load_manifest(folder)
            self._from_manifest(manifest, _pick_input(manifest, tensor, single_input))
        elif (parent := parent_input(folder)) is not None:
            self._from_manifest(*parent)
        else:
            self._bare(sorted(folder.glob("*.bin"), key=natural_order), dtype_name)
        self._starts = [0]
        for piece in self._pieces:
            self._starts.append(self._starts[-1] + piece.rows)
        self._verified: set[int] = set()

    def _from_manifest(self, manifest: DatasetManifest, item: InputManifest) -> None:
        self._manifest_source = item.source
        self._shape = tuple(item.shape[1:])  # the caller's shape check names it beside the model's
        for entry in item.files:
            path = manifest.file_path(item, entry)
            check_bin_size(path, item.spec)
            self._pieces.append(_BinPiece(path, item.spec, entry.rows, entry, manifest.path))

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
            self._pieces.append(_BinPiece(path, spec, rows))

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
        else:  # bare bins: the order they were read in, which decides each sample's index
            found["order"] = NATURAL_ORDER
            found["file_names"] = [piece.path.name for piece in self._pieces]
        return found

    def _piece_rows(self, index: int) -> np.ndarray:
        piece = self._pieces[index]
        if piece.entry is not None and piece.manifest_path is not None and index not in self._verified:
            check_digest(piece.path, piece.entry, piece.manifest_path)
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
