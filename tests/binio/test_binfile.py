"""Raw .bin files: the bytes are the array's, little-endian, and a wrong size is refused with both sizes named."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import xxhash

from binio.binfile import read_bin, write_bin
from binio.errors import BinFileError
from binio.spec import TensorSpec


def test_round_trip_and_digest(tmp_path: Path) -> None:
    array = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    path = tmp_path / "000000.bin"
    digest = write_bin(path, array, "float32")
    assert digest == xxhash.xxh3_128(path.read_bytes()).hexdigest()
    assert path.read_bytes() == array.astype("<f4").tobytes()
    back = read_bin(path, TensorSpec("x:0", "float32", (2, 3, 4)))
    np.testing.assert_array_equal(back, array)
    mapped = read_bin(path, TensorSpec("x:0", "float32", (2, 3, 4)), mmap=True)
    np.testing.assert_array_equal(mapped, array)


def test_big_endian_array_is_written_little_endian(tmp_path: Path) -> None:
    array = np.arange(4, dtype=">i4")
    write_bin(tmp_path / "a.bin", array)
    assert (tmp_path / "a.bin").read_bytes() == np.arange(4, dtype="<i4").tobytes()


def test_wrong_size_names_expected_and_found_and_guesses_the_dtype(tmp_path: Path) -> None:
    path = tmp_path / "000003.bin"
    write_bin(path, np.zeros((1, 224, 224, 3), dtype=np.float16))
    with pytest.raises(BinFileError) as caught:
        read_bin(path, TensorSpec("input:0", "float32", (1, 224, 224, 3)))
    assert str(caught.value) == f"{path}: expected 602112 bytes for shape (1,224,224,3) float32, got 301056 " \
                                "(is it float16?)"


def test_wrong_size_without_a_matching_dtype_has_no_guess(tmp_path: Path) -> None:
    path = tmp_path / "odd.bin"
    path.write_bytes(b"\0" * 7)
    with pytest.raises(BinFileError) as caught:
        read_bin(path, TensorSpec("x:0", "int32", (2,)))
    assert str(caught.value) == f"{path}: expected 8 bytes for shape (2) int32, got 7"


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(BinFileError, match="no such file"):
        read_bin(tmp_path / "none.bin", TensorSpec("x:0", "int32", (2,)))


def test_write_refuses_an_array_of_another_dtype(tmp_path: Path) -> None:
    with pytest.raises(BinFileError) as caught:
        write_bin(tmp_path / "a.bin", np.zeros(3, dtype=np.float64), "float32")
    assert str(caught.value) == f"{tmp_path / 'a.bin'}: array is float64, expected float32"
    assert not list(tmp_path.iterdir())  # nothing half-written


@pytest.mark.parametrize("array", [np.arange(12, dtype=">f4").reshape(3, 4)[:, ::2],  # big-endian, strided
                                   np.array([True, False, True]), np.zeros((0, 3), np.float16),
                                   np.float32(2.5).reshape(())], ids=["strided-big-endian", "bool", "empty", "0-d"])
def test_write_raw_writes_the_little_endian_bytes_and_hands_them_back(tmp_path: Path, array: np.ndarray) -> None:
    """`infer run` writes outputs with write_raw: no copy where none is needed, no sha256 nobody reads."""
    from binio.binfile import write_raw

    path = tmp_path / "out.bin"
    written = write_raw(path, array)
    expected = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<")).tobytes()
    assert path.read_bytes() == expected == bytes(written)
    assert [p.name for p in tmp_path.iterdir()] == ["out.bin"]  # no temporary left beside it
