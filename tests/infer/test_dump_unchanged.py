"""dump-bin of an .npy already in the model's dtype: batches are read from the file straight into the buffer they
are written from (no copy, no cast) with the same refusals, bytes and digests as a cast into a batch buffer."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import xxhash

import binio.cast
import infer.dump_bin._dump
from infer.contract import ModelContract
from infer.dump_bin._dump import DumpOptions, dump_bins
from infer.dump_bin._sources.arrays import NpySource
from infer.dump_bin.errors import LossyCastError


def _data(path: Path, samples: int) -> np.ndarray:
    array = np.random.default_rng(5).normal(size=(samples, 8, 8, 3)).astype(np.float32)
    np.save(path, array)
    return array


def test_whole_batches_skip_the_cast_and_the_files_are_the_rows_with_their_digest(
        frozen_small_cnn: ModelContract, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    casts: list[int] = []

    def counting_cast(out: np.ndarray, src: np.ndarray) -> binio.cast.CastReport:
        casts.append(len(src))
        return binio.cast.checked_cast_into(out, src)

    monkeypatch.setattr(infer.dump_bin._dump, "checked_cast_into", counting_cast)
    array = _data(tmp_path / "data.npy", samples=21)  # batch 2: 10 whole batches and one padded
    result = dump_bins(frozen_small_cnn,
                       DumpOptions(output=tmp_path / "bins", sources=(("", str(tmp_path / "data.npy")),)))
    assert casts == []  # every batch, the padded last one too, is read straight into the buffer it is written from
    manifest = result.manifest
    (item,) = manifest.inputs
    assert len(item.files) == 11
    padded = np.concatenate([array, np.zeros((1, 8, 8, 3), np.float32)])
    for index, entry in enumerate(item.files):
        path = manifest.file_path(item, entry)
        assert path.read_bytes() == padded[2 * index:2 * index + 2].tobytes()
        assert entry.digest == xxhash.xxh3_128(path.read_bytes()).hexdigest()
    assert item.preprocessing["cast"] == {"from": "float32", "to": "float32", "values": 21 * 192, "overflow": 0,
                                          "nan": 0, "inf": 0, "truncated": 0, "out_of_range": 0, "max_error": 0.0}


def test_nan_and_inf_in_a_whole_batch_are_still_refused_and_counted_with_allow_lossy(
        frozen_small_cnn: ModelContract, tmp_path: Path) -> None:
    array = _data(tmp_path / "data.npy", samples=8)
    array[5, 1, 2, 0] = np.nan
    array[6, 0, 0, 1] = -np.inf
    np.save(tmp_path / "data.npy", array)
    source = (("", str(tmp_path / "data.npy")),)
    with pytest.raises(LossyCastError) as refused:
        dump_bins(frozen_small_cnn, DumpOptions(output=tmp_path / "bins", sources=source))
    assert refused.value.message == ("input images:0: 1 NaN casting float32 to float32 in images/000002.bin "
                                     "(samples 4..5)")
    assert not (tmp_path / "bins" / "dataset.json").exists()
    result = dump_bins(frozen_small_cnn, DumpOptions(output=tmp_path / "lossy", sources=source, allow_lossy=True))
    (cast,) = (i.cast for i in result.inputs)
    assert (cast.nan, cast.inf, cast.lossy) == (1, 1, 2)
    (item,) = result.manifest.inputs
    written = b"".join(result.manifest.file_path(item, e).read_bytes() for e in item.files)
    assert written == array.tobytes()  # NaN and inf written as they are, bit for bit


def test_rows_read_from_an_npy_stay_readable_after_the_source_is_closed(tmp_path: Path) -> None:
    """Closing the source must not unmap rows still held elsewhere (a batch being written): reading them after
    an explicit unmap would crash the process."""
    array = _data(tmp_path / "data.npy", samples=6)
    source = NpySource(tmp_path / "data.npy")
    rows = [source.read(0, 2), source.read(2, 4)]
    source.close()
    np.testing.assert_array_equal(np.concatenate(rows), array[:4])


@pytest.mark.parametrize("order", ["C", "F"])
def test_npy_rows_read_from_the_file_are_the_arrays_rows(tmp_path: Path, order: str) -> None:
    """C order is read from the file batch by batch; Fortran order (rows spread over the file) through the map."""
    array = np.random.default_rng(3).normal(size=(7, 5, 4)).astype(">f4" if order == "C" else "<f8")
    np.save(tmp_path / "data.npy", np.ascontiguousarray(array) if order == "C" else np.asfortranarray(array))
    source = NpySource(tmp_path / "data.npy")
    rows = [source.read(0, 3), source.read(3, 6), source.read(6, 7)]
    assert all(r.dtype == array.dtype for r in rows)
    np.testing.assert_array_equal(np.concatenate(rows), array)
    source.close()


def test_an_npy_cut_short_after_it_was_opened_is_refused_by_name(tmp_path: Path) -> None:
    from infer.dump_bin.errors import SourceError

    _data(tmp_path / "data.npy", samples=6)
    source = NpySource(tmp_path / "data.npy")
    size = (tmp_path / "data.npy").stat().st_size
    with open(tmp_path / "data.npy", "r+b") as handle:
        handle.truncate(size - 8 * 8 * 3 * 4)  # the last sample gone
    assert source.read(0, 5).shape == (5, 8, 8, 3)
    with pytest.raises(SourceError, match=r"data\.npy: ends before sample 6"):
        source.read(5, 6)
    source.close()
