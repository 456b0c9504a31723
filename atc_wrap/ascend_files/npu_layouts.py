"""NPU tensor layouts turned back into the framework's: `to_origin_layout(array, format, shape, origin_format,
origin_shape)`.

The layouts, as GE and the TBE kernels define them (C0, Ni and the other block sizes are read from the device
shape, not assumed: 16 for float16, 32 for int8, 4 for the _C04 variants):
- NC1HWC0, NC1HWC0_C04: [N, C1, H, W, C0], C1 = ceil(C / C0), channel c at (c // C0, c % C0), zero-padded.
- NDC1HWC0: [N, D, C1, H, W, C0], the same for 5-D tensors.
- FRACTAL_NZ: the last two axes [M, N] of a matrix (batched or not) as [..., ceil(N / C0), ceil(M / Ni), Ni, C0];
  element (m, n) at (n // C0, m // Ni, m % Ni, n % C0). A 1-D origin is a 1 x N matrix.
- FRACTAL_Z (convolution weights): [C1 * H * W, ceil(N / Ni), Ni, C0]; weight (n, c, h, w) at
  ((c // C0) * H * W + h * W + w, n // Ni, n % Ni, c % C0).
- NCHW, NHWC, HWCN, CHWN, NCDHW, NDHWC, DHWCN: plain axis orders, turned into one another by transposing; ND (and
  anything with the origin's shape) is taken as it is.
Padding is dropped using the origin shape. Anything else is refused by name (LayoutError).
"""

from __future__ import annotations

from collections.abc import Sequence
from math import ceil, prod

import numpy as np

from atc_wrap.ascend_files.errors import LayoutError

PLAIN_FORMATS = ("NCHW", "NHWC", "HWCN", "CHWN", "NCDHW", "NDHWC", "DHWCN", "ND")
CONVERTED_FORMATS = ("NC1HWC0", "NC1HWC0_C04", "NDC1HWC0", "FRACTAL_NZ", "FRACTAL_Z")
_AXES_4D = ("NCHW", "NHWC", "HWCN", "CHWN")
_AXES_5D = ("NCDHW", "NDHWC", "DHWCN")


def format_name(name: str) -> str:
    """A format as GE's layout string spells it: ``FORMAT_NC1HWC0`` and ``nc1hwc0`` become ``NC1HWC0``."""
    upper = name.strip().upper()
    return upper.removeprefix("FORMAT_")


def _describe(fmt: str, shape: Sequence[int]) -> str:
    return f"{fmt} {tuple(shape)}"


def _permute(array: np.ndarray, source: str, target: str) -> np.ndarray:
    return np.transpose(array, tuple(source.index(axis) for axis in target))


def _origin_axes(origin_format: str, rank: int, allowed: tuple[str, ...], device: str) -> str:
    if origin_format in allowed and len(origin_format) == rank:
        return origin_format
    raise LayoutError(f"cannot turn {device} back into {origin_format or 'an unknown format'} of rank {rank}: "
                      f"expected an origin format of {' or '.join(allowed)}")


def _nc1hwc0(array: np.ndarray, shape: tuple[int, ...], origin_format: str, origin: tuple[int, ...],
             device: str) -> np.ndarray:
    axes = _origin_axes(origin_format, 4, ("NCHW", "NHWC"), device)
    n, c, h, w = (origin[axes.index(a)] for a in "NCHW")
    if len(shape) != 5:
        raise LayoutError(f"{_describe(device, shape)}: expected 5 dims [N, C1, H, W, C0]")
    c0 = shape[4]
    expected = (n, ceil(c / c0) if c0 else 0, h, w, c0)
    if shape != expected:
        raise LayoutError(f"{_describe(device, shape)} does not hold {_describe(axes, origin)}: expected {expected}")
    nchw = np.transpose(array.reshape(shape), (0, 1, 4, 2, 3)).reshape(n, shape[1] * c0, h, w)[:, :c]
    return _permute(nchw, "NCHW", axes)


def _ndc1hwc0(array: np.ndarray, shape: tuple[int, ...], origin_format: str, origin: tuple[int, ...],
              device: str) -> np.ndarray:
    axes = _origin_axes(origin_format, 5, ("NCDHW", "NDHWC"), device)
    n, c, d, h, w = (origin[axes.index(a)] for a in "NCDHW")
    if len(shape) != 6:
        raise LayoutError(f"{_describe(device, shape)}: expected 6 dims [N, D, C1, H, W, C0]")
    c0 = shape[5]
    expected = (n, d, ceil(c / c0) if c0 else 0, h, w, c0)
    if shape != expected:
        raise LayoutError(f"{_describe(device, shape)} does not hold {_describe(axes, origin)}: expected {expected}")
    ncdhw = np.transpose(array.reshape(shape), (0, 2, 5, 1, 3, 4)).reshape(n, shape[2] * c0, d, h, w)[:, :c]
    return _permute(ncdhw, "NCDHW", axes)


def _fractal_nz(array: np.ndarray, shape: tuple[int, ...], origin: tuple[int, ...], device: str) -> np.ndarray:
    matrix = (1, *origin) if len(origin) == 1 else origin
    if len(matrix) < 2 or len(shape) < 4:
        raise LayoutError(f"{_describe(device, shape)} for origin shape {origin}: expected a matrix origin and "
                          f"[..., N1, M1, M0, N0] on the device")
    *batch, m, n = matrix
    n1, m1, m0, n0 = shape[-4:]
    expected_blocks = (ceil(n / n0) if n0 else 0, ceil(m / m0) if m0 else 0)
    if prod(shape[:-4]) != prod(batch) or (n1, m1) != expected_blocks:
        raise LayoutError(f"{_describe(device, shape)} does not hold a matrix of shape {origin}: expected "
                          f"{(*batch, *expected_blocks, m0, n0)}")
    blocks = array.reshape(prod(batch), n1, m1, m0, n0)
    full = np.transpose(blocks, (0, 2, 3, 1, 4)).reshape(prod(batch), m1 * m0, n1 * n0)
    return full[:, :m, :n].reshape(origin)


def _fractal_z(array: np.ndarray, shape: tuple[int, ...], origin_format: str, origin: tuple[int, ...],
               device: str) -> np.ndarray:
    axes = _origin_axes(origin_format, 4, _AXES_4D, device)
    n, c, h, w = (origin[axes.index(a)] for a in "NCHW")
    if len(shape) != 4:
        raise LayoutError(f"{_describe(device, shape)}: expected 4 dims [C1*H*W, N1, N0, C0]")
    _, n1, n0, c0 = shape
    c1 = ceil(c / c0) if c0 else 0
    expected = (c1 * h * w, ceil(n / n0) if n0 else 0, n0, c0)
    if shape != expected:
        raise LayoutError(f"{_describe(device, shape)} does not hold weights {_describe(axes, origin)}: expected "
                          f"{expected}")
    blocks = array.reshape(c1, h, w, n1, n0, c0)
    hwcn = np.transpose(blocks, (1, 2, 0, 5, 3, 4)).reshape(h, w, c1 * c0, n1 * n0)[:, :, :c, :n]
    return _permute(hwcn, "HWCN", axes)


def _plain(array: np.ndarray, fmt: str, shape: tuple[int, ...], origin_format: str,
           origin: tuple[int, ...]) -> np.ndarray:
    if shape == origin or fmt == "ND" or origin_format == "ND" or fmt == origin_format:
        if prod(shape) != prod(origin):
            raise LayoutError(f"{_describe(fmt, shape)} does not hold {_describe(origin_format, origin)}: "
                              f"{prod(shape)} elements against {prod(origin)}")
        return array.reshape(origin)
    for family in (_AXES_4D, _AXES_5D):
        if fmt in family and origin_format in family:
            if len(shape) != len(fmt):
                raise LayoutError(f"{_describe(fmt, shape)}: expected {len(fmt)} dims")
            moved = _permute(array.reshape(shape), fmt, origin_format)
            if moved.shape != origin:
                raise LayoutError(f"{_describe(fmt, shape)} does not hold {_describe(origin_format, origin)}: "
                                  f"transposed, it is {moved.shape}")
            return moved
    raise LayoutError(f"cannot turn {_describe(fmt, shape)} into {_describe(origin_format or '?', origin)}: "
                      f"expected two axis orders of the same rank ({', '.join(_AXES_4D + _AXES_5D)}) or equal shapes")


def to_origin_layout(array: np.ndarray, device_format: str, device_shape: Sequence[int], origin_format: str,
                     origin_shape: Sequence[int]) -> np.ndarray:
    """`array` (flat, or in any shape, with the device shape's element count) in the device layout, returned in
    the origin layout and shape, padding dropped. Refused (LayoutError): a layout not listed above, or shapes that
    do not fit the layout."""
    fmt, origin_fmt = format_name(device_format), format_name(origin_format)
    shape, origin = tuple(int(d) for d in device_shape), tuple(int(d) for d in origin_shape)
    if any(d < 0 for d in shape + origin):
        raise LayoutError(f"{_describe(fmt, shape)} -> {_describe(origin_fmt, origin)}: a dim is unknown (< 0)")
    if array.size != prod(shape):
        raise LayoutError(f"{_describe(fmt, shape)} takes {prod(shape)} elements, the data has {array.size}")
    if fmt in ("NC1HWC0", "NC1HWC0_C04"):
        return _nc1hwc0(array, shape, origin_fmt, origin, fmt)
    if fmt == "NDC1HWC0":
        return _ndc1hwc0(array, shape, origin_fmt, origin, fmt)
    if fmt == "FRACTAL_NZ":
        return _fractal_nz(array, shape, origin, fmt)
    if fmt == "FRACTAL_Z":
        return _fractal_z(array, shape, origin_fmt, origin, fmt)
    if fmt in PLAIN_FORMATS:
        return _plain(array, fmt, shape, origin_fmt, origin)
    raise LayoutError(f"the NPU layout {fmt} cannot be turned back here: expected one of "
                      f"{', '.join(CONVERTED_FORMATS + PLAIN_FORMATS)}")
