"""Contiguous shards of a dataset's batches, and a dataset folder that holds only some of them.

A shard is a contiguous run of batch files (by file stem, in the manifest's order), so shards are deterministic:
the same dataset split the same number of ways gives the same shards on every machine. A view of a dataset is a
folder holding only some of its batches: the input folders with links to those bins and a ``dataset.json``
listing just those, which msame (it feeds every file of a folder) and every stage read as a whole dataset. Used by
a sharded run (one view per worker), compare's workers (shards of the batches) and tune-precision (the first
batches of a dataset).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from binio.errors import InferError
from binio.file_stems import FileStems
from binio.manifest import DatasetManifest


class ShardError(InferError):
    """A shard request that cannot be met (more shards than batches, none at all)."""


@dataclass(frozen=True)
class Shard:
    """Batches ``first`` .. ``first + len(stems) - 1`` of the dataset."""

    index: int
    first: int  # position of the shard's first batch in the dataset
    stems: Sequence[str]  # a FileStems where split made it

    def describe(self) -> str:
        span = self.stems[0] if len(self.stems) == 1 else f"{self.stems[0]}-{self.stems[-1]}"
        return f"shard {self.index} (batches {span})"


def split(stems: Sequence[str], count: int) -> tuple[Shard, ...]:
    """`count` contiguous shards of `stems`, the first ``len % count`` one batch longer (numpy's array_split)."""
    if count < 1:
        raise ShardError(f"{count} shards: expected 1 or more")
    count = min(count, len(stems))
    size, extra = divmod(len(stems), count)
    stems = FileStems.of(stems)  # a slice of a run of dump-bin's stems is held as its range
    shards = []
    first = 0
    for index in range(count):
        length = size + (1 if index < extra else 0)
        shards.append(Shard(index=index, first=first, stems=stems[first:first + length]))
        first += length
    return tuple(shards)


def sub_manifest(manifest: DatasetManifest, stems: Sequence[str], root: Path) -> DatasetManifest:
    """The manifest of only `stems`' batches, rooted at `root` (their file entries and digests unchanged)."""
    wanted = FileStems.of(stems)
    inputs = tuple(replace(item, files=tuple(e for e in item.files if Path(e.name).stem in wanted))
                   for item in manifest.inputs)
    samples = sum(entry.rows for entry in inputs[0].files)
    return replace(manifest, root=root, samples=samples, inputs=inputs)


def _link(source: Path, target: Path) -> None:
    try:
        target.symlink_to(source)
    except OSError:  # a file system without symlinks: a hard link, or a copy where even that fails
        try:
            os.link(source, target)
        except OSError:
            shutil.copyfile(source, target)


def write_view(manifest: DatasetManifest, stems: Sequence[str], root: Path) -> DatasetManifest:
    """`root` as a dataset of `stems` only: links to the original bins and its own dataset.json."""
    if root.exists():
        shutil.rmtree(root)
    view = sub_manifest(manifest, stems, root)
    for item in view.inputs:
        folder = root / item.folder
        folder.mkdir(parents=True)
        for entry in item.files:
            _link((manifest.root / item.folder / entry.name).resolve(), folder / entry.name)
    return view.save()
