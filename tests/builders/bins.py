"""Datasets of bins (BINS/<input>/000000.bin ... + dataset.json), written the way dump-bin writes them, without
running it: `write_dataset` from arrays, `write_bins` from seeded random values for a model's one input."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from binio.binfile import write_bin
from binio.dtypes import from_numpy
from binio.manifest import BinEntry, DatasetManifest, InputManifest, bin_file_name, safe_folder_name


def write_dataset(root: Path, batches: dict[str, list[np.ndarray]], *, samples: int | None = None,
                  layout: str = "ND") -> DatasetManifest:
    """BINS/<input>/000000.bin ... + dataset.json: each input's arrays, one a batch file; `samples` real ones in
    all (the rest of the last batch is padding), every row by default."""
    inputs = []
    batch = next(iter(batches.values()))[0].shape[0]
    count = len(next(iter(batches.values())))
    total = samples if samples is not None else batch * count
    rows = [min(batch, total - i * batch) for i in range(count)]
    for tensor, arrays in batches.items():
        folder = safe_folder_name(tensor)
        entries = []
        for index, (array, real) in enumerate(zip(arrays, rows, strict=True)):
            digest = write_bin(root / folder / bin_file_name(index), array)
            entries.append(BinEntry(name=bin_file_name(index), digest=digest, rows=real))
        inputs.append(InputManifest(tensor=tensor, folder=folder, dtype=from_numpy(arrays[0].dtype).name,
                                    shape=tuple(arrays[0].shape), layout=layout, files=tuple(entries)))
    return DatasetManifest(root=root, batch=batch, samples=total, inputs=tuple(inputs), created_by="tests").save()


def write_bins(root: Path, tensor: str, shape: tuple[int, ...], *, files: int = 2, seed: int = 0,
               uniform: tuple[float, float] | None = None, scale: float = 1.0, offset: float = 0.0) -> Path:
    """`files` batches of float32 values of `shape` for the one input `tensor`, and dataset.json: uniform in
    [low, high) where `uniform` gives them, standard normal times `scale` plus `offset` otherwise."""
    rng = np.random.default_rng(seed)
    batches = [(rng.uniform(*uniform, size=shape) if uniform is not None else offset + scale * rng.normal(size=shape))
               .astype(np.float32) for _ in range(files)]
    write_dataset(root, {tensor: batches}, layout="NHWC" if len(shape) == 4 else "ND")
    return root
