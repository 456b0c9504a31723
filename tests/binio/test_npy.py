"""binio.npy: an .npy header is held to the bytes behind it before numpy maps or loads the array, whatever shape the
header declares (past 64 bits, negative, absurd)."""

from __future__ import annotations

import io
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from binio.errors import InferError
from binio.npy import check_npy_header, check_npy_stream


def _npy(shape: tuple[int, ...], dtype: str, data: int) -> bytes:
    stream = io.BytesIO()
    np.lib.format.write_array_header_1_0(stream, {"descr": dtype, "fortran_order": False, "shape": shape})
    return stream.getvalue() + b"\x01" * data


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(shape=st.lists(st.one_of(st.integers(0, 6), st.integers(0, 2**70)), max_size=4).map(tuple),
       dtype=st.sampled_from(["<f4", "<i8", "|u1", "<f2"]), data=st.integers(0, 400))
def test_a_header_is_accepted_only_when_the_file_holds_it(shape: tuple[int, ...], dtype: str, data: int) -> None:
    raw = _npy(shape, dtype, data)
    needed = math.prod(shape) * np.dtype(dtype).itemsize
    try:
        found, kind = check_npy_stream(io.BytesIO(raw), len(raw), "a.npy")
    except InferError as refusal:
        assert refusal.message.startswith("a.npy: ") and "\n" not in refusal.message
        assert needed > data or math.prod(max(d, 1) for d in shape) * np.dtype(dtype).itemsize > sys.maxsize
        return
    assert needed <= data and found == shape and kind == np.dtype(dtype)
    array = np.load(io.BytesIO(raw), allow_pickle=False)  # numpy reads what was accepted, without a traceback
    assert array.shape == shape


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_any_bytes_are_a_header_or_one_refusal(raw: bytes) -> None:
    try:
        check_npy_stream(io.BytesIO(raw), len(raw), "a.npy")
    except InferError as refusal:
        assert refusal.message.startswith("a.npy: ") and "\n" not in refusal.message


def test_the_file_is_read_by_its_header_alone(tmp_path: Path) -> None:
    path = tmp_path / "huge.npy"
    head = _npy((10**9, 10**3), "<f4", 0)
    with open(path, "wb") as handle:
        handle.write(head)
        handle.truncate(2**32)  # sparse: 4 GiB the check never reads
    with pytest.raises(InferError) as refused:
        check_npy_header(path)
    assert refused.value.message == (f"{path}: its header declares shape (1000000000, 1000) float32 "
                                     f"({4 * 10**12:,} bytes), the file holds {2**32 - len(head):,} bytes after it")
    path.write_bytes(_npy((10**12, 10**12), "<f4", 0))
    with pytest.raises(InferError) as absurd:
        check_npy_header(path)
    assert absurd.value.message == (f"{path}: its header declares shape (1000000000000, 1000000000000), which no "
                                    "array has (numpy sizes them in 64 bits)")
