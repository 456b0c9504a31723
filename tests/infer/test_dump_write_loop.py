"""dump-bin's write loop: new files take the umask in force when they are created, a change between calls
included; the digests taken on the writing thread are the XXH3-128 of the files on disk."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import numpy as np
import xxhash

from infer.contract import ModelContract
from infer.dump_bin._dump import DumpOptions, dump_bins


def _npy(path: Path, samples: int) -> Path:
    np.save(path, np.random.default_rng(3).normal(size=(samples, 8, 8, 3)).astype(np.float32))
    return path


def test_files_take_the_umask_of_the_moment_they_are_created(frozen_small_cnn: ModelContract,
                                                             tmp_path: Path) -> None:
    data = _npy(tmp_path / "data.npy", samples=20)  # batch 2: 10 bins
    previous = os.umask(0o077)
    try:
        first = dump_bins(frozen_small_cnn, DumpOptions(output=tmp_path / "first", sources=(("", str(data)),)))
        os.umask(0o002)
        second = dump_bins(frozen_small_cnn, DumpOptions(output=tmp_path / "second", sources=(("", str(data)),)))
    finally:
        os.umask(previous)
    assert first.files_written == 10
    for result, mode in ((first, 0o600), (second, 0o664)):
        manifest = result.manifest
        written = [manifest.path, *(manifest.file_path(i, e) for i in manifest.inputs for e in i.files)]
        assert {stat.S_IMODE(p.stat().st_mode) for p in written} == {mode}


def test_the_digests_in_the_manifest_are_the_xxh128_of_the_files_written(frozen_small_cnn: ModelContract,
                                                                         tmp_path: Path) -> None:
    data = _npy(tmp_path / "data.npy", samples=15)  # 8 bins, the last one padded
    result = dump_bins(frozen_small_cnn, DumpOptions(output=tmp_path / "bins", sources=(("", str(data)),)))
    manifest = result.manifest
    entries = [(manifest.file_path(i, e), e) for i in manifest.inputs for e in i.files]
    assert len(entries) == 8
    recorded = json.loads(manifest.path.read_text())["inputs"][0]["files"]
    assert [sorted(entry) for entry in recorded] == [["name", "rows", "xxh128"]] * 8
    assert [xxhash.xxh3_128(path.read_bytes()).hexdigest() for path, _ in entries] == [e.digest for _, e in entries]
