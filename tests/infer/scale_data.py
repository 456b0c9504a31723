"""Shared by the scale-out tests: a dataset of uneven shards, the fake-om model, byte-for-byte folder comparison."""

from __future__ import annotations

import filecmp
from pathlib import Path

from binio.manifest import DatasetManifest
from infer.run.layout import RUN_JSON
from tests.builders.bins import write_dataset
from tests.infer.run_data import cnn_batches

BATCHES = 5  # split 2 ways: 3 + 2; 3 ways: 2 + 2 + 1


def scale_bins(root: Path) -> DatasetManifest:
    """5 batches of 2 for the small CNN, the last with one row of padding."""
    return write_dataset(root, {"images:0": cnn_batches(BATCHES, seed=7)}, samples=2 * BATCHES - 1, layout="NHWC")


def output_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.is_file() and p.name != RUN_JSON)


def assert_same_outputs(single: Path, sharded: Path) -> None:
    """The same output files, each byte for byte, and nothing else but run.json (no work folder left)."""
    names = output_files(single)
    assert len(names) == BATCHES * 1 and output_files(sharded) == names
    assert sorted(p.name for p in sharded.iterdir()) == sorted(p.name for p in single.iterdir())
    match, mismatch, errors = filecmp.cmpfiles(single, sharded, names, shallow=False)
    assert (mismatch, errors) == ([], []) and match == names
