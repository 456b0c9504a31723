"""Each NPU layout, written by the element-by-element reference from a known framework tensor, comes back as that
tensor: padding dropped, axes in the origin format's order; what cannot be turned back is refused by name."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from atc_wrap.ascend_files.errors import LayoutError
from atc_wrap.ascend_files.npu_layouts import to_origin_layout
from tests.atc_wrap.npu_layout_reference import (
    hwcn_to_fractal_z,
    ncdhw_to_ndc1hwc0,
    nchw_to_nc1hwc0,
    nd_to_fractal_nz,
)


def _values(shape: tuple[int, ...], dtype: str = "float16") -> np.ndarray:
    # 1-based so that no real value looks like padding
    return (np.arange(np.prod(shape), dtype=np.float64) + 1).reshape(shape).astype(dtype)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 3), st.integers(1, 40), st.integers(1, 4), st.integers(1, 4), st.sampled_from([16, 32, 4]))
def test_nc1hwc0_back_to_nchw_and_nhwc(n: int, c: int, h: int, w: int, c0: int) -> None:
    nchw = _values((n, c, h, w))
    device = nchw_to_nc1hwc0(nchw, c0)
    fmt = "NC1HWC0_C04" if c0 == 4 else "NC1HWC0"
    assert np.array_equal(to_origin_layout(device.ravel(), fmt, device.shape, "NCHW", nchw.shape), nchw)
    nhwc = nchw.transpose(0, 2, 3, 1)
    assert np.array_equal(to_origin_layout(device, "FORMAT_NC1HWC0", device.shape, "NHWC", nhwc.shape), nhwc)


def test_ndc1hwc0_back_to_ncdhw_and_ndhwc() -> None:
    ncdhw = _values((2, 20, 3, 2, 2))
    device = ncdhw_to_ndc1hwc0(ncdhw, 16)
    assert np.array_equal(to_origin_layout(device, "NDC1HWC0", device.shape, "NCDHW", ncdhw.shape), ncdhw)
    ndhwc = ncdhw.transpose(0, 2, 3, 4, 1)
    assert np.array_equal(to_origin_layout(device, "NDC1HWC0", device.shape, "NDHWC", ndhwc.shape), ndhwc)


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 3), max_size=2), st.integers(1, 40), st.integers(1, 40))
def test_fractal_nz_back_to_nd_batched_or_not(batch: list[int], rows: int, cols: int) -> None:
    nd = _values((*batch, rows, cols))
    device = nd_to_fractal_nz(nd)
    # the origin format of a matrix is ND or, in real oms, NHWC on a 2-D shape: the shape decides
    for origin_format in ("ND", "NHWC"):
        assert np.array_equal(to_origin_layout(device, "FRACTAL_NZ", device.shape, origin_format, nd.shape), nd)


def test_fractal_nz_of_a_vector_is_a_one_row_matrix() -> None:
    vector = _values((21,))
    device = nd_to_fractal_nz(vector)
    assert device.shape == (2, 1, 16, 16)
    assert np.array_equal(to_origin_layout(device, "FRACTAL_NZ", device.shape, "ND", (21,)), vector)


def test_fractal_nz_of_int8_has_32_wide_blocks() -> None:
    nd = _values((5, 40), "int8")
    device = nd_to_fractal_nz(nd, 16, 32)
    assert device.shape == (2, 1, 16, 32)
    assert np.array_equal(to_origin_layout(device, "FRACTAL_NZ", device.shape, "ND", nd.shape), nd)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 3), st.integers(1, 3), st.integers(1, 40), st.integers(1, 40))
def test_fractal_z_back_to_hwcn_nchw_and_nhwc(h: int, w: int, c: int, n: int) -> None:
    hwcn = _values((h, w, c, n))
    device = hwcn_to_fractal_z(hwcn)
    assert np.array_equal(to_origin_layout(device, "FRACTAL_Z", device.shape, "HWCN", hwcn.shape), hwcn)
    nchw = hwcn.transpose(3, 2, 0, 1)
    assert np.array_equal(to_origin_layout(device, "FRACTAL_Z", device.shape, "NCHW", nchw.shape), nchw)
    nhwc = hwcn.transpose(3, 0, 1, 2)
    assert np.array_equal(to_origin_layout(device, "FRACTAL_Z", device.shape, "NHWC", nhwc.shape), nhwc)


def test_the_real_oms_conv_weight_shape_is_what_the_definition_gives() -> None:
    """hh_om.om (Ascend/ModelZoo-TensorFlow AutoEncoder): HWCN (5, 5, 1, 16) is stored as FRACTAL_Z (25, 1, 16, 16),
    and (5, 5, 16, 32) as (25, 2, 16, 16)."""
    assert hwcn_to_fractal_z(np.zeros((5, 5, 1, 16))).shape == (25, 1, 16, 16)
    assert hwcn_to_fractal_z(np.zeros((5, 5, 16, 32))).shape == (25, 2, 16, 16)


def test_plain_layouts_are_transposed_or_taken_as_they_are() -> None:
    nchw = _values((2, 3, 4, 5))
    nhwc = nchw.transpose(0, 2, 3, 1)
    assert np.array_equal(to_origin_layout(nchw, "NCHW", nchw.shape, "NHWC", nhwc.shape), nhwc)
    assert np.array_equal(to_origin_layout(nhwc, "NHWC", nhwc.shape, "NCHW", nchw.shape), nchw)
    assert np.array_equal(to_origin_layout(nchw.ravel(), "ND", (120,), "NCHW", nchw.shape), nchw)
    assert np.array_equal(to_origin_layout(nchw, "NCHW", nchw.shape, "NCHW", nchw.shape), nchw)


@pytest.mark.parametrize(("args", "says"), [
    ((np.zeros(16), "FRACTAL_ZZ", (1, 1, 4, 4), "ND", (4, 4)), "the NPU layout FRACTAL_ZZ cannot be turned back"),
    ((np.zeros(10), "NC1HWC0", (1, 1, 1, 1, 16), "NCHW", (1, 16, 1, 1)), "takes 16 elements, the data has 10"),
    ((np.zeros(16), "NC1HWC0", (1, 1, 1, 1, 16), "NCHW", (1, 17, 1, 1)), r"expected \(1, 2, 1, 1, 16\)"),
    ((np.zeros(16), "NC1HWC0", (1, 1, 1, 1, 16), "ND", (1, 16, 1, 1)), "expected an origin format of NCHW or NHWC"),
    ((np.zeros(256), "FRACTAL_NZ", (1, 1, 16, 16), "ND", (17, 16)), r"expected \(1, 2, 16, 16\)"),
    ((np.zeros(256), "FRACTAL_Z", (1, 1, 16, 16), "ND", (16, 16)), "expected an origin format of NCHW or NHWC or"),
    ((np.zeros(6), "NCHW", (1, 2, 3, 1), "NCDHW", (1, 2, 3, 1, 1)), "expected two axis orders of the same rank"),
    ((np.zeros(4), "NCHW", (1, -1, 2, 2), "NHWC", (1, 2, 2, 1)), "a dim is unknown"),
])
def test_what_cannot_be_turned_back_is_refused_by_name(
        args: tuple[np.ndarray, str, tuple[int, ...], str, tuple[int, ...]], says: str) -> None:
    with pytest.raises(LayoutError, match=says):
        to_origin_layout(*args)
