"""write_bin then read_bin gives back the same array, for every dtype and shape."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import xxhash
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from binio.binfile import read_bin, write_bin
from binio.dtypes import DTYPE_NAMES, dtype
from binio.spec import TensorSpec


@st.composite
def arrays(draw: st.DrawFn) -> np.ndarray:
    name = draw(st.sampled_from(DTYPE_NAMES))
    return draw(hnp.arrays(np.dtype(dtype(name).numpy), hnp.array_shapes(min_dims=1, max_dims=4, max_side=6)))


@pytest.mark.slow
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(arrays())
def test_write_then_read_is_identity(tmp_path: Path, array: np.ndarray) -> None:
    path = tmp_path / "x.bin"
    digest = write_bin(path, array, array.dtype.name)
    back = read_bin(path, TensorSpec("x:0", array.dtype.name, tuple(array.shape)))
    assert back.dtype == array.dtype
    np.testing.assert_array_equal(back, array)
    assert digest == xxhash.xxh3_128(path.read_bytes()).hexdigest()
    assert path.stat().st_size == array.nbytes
