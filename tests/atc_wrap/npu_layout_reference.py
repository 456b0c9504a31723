"""The NPU layouts written element by element from their definitions (GE's format_transfer_*.cc comments, the TBE
layout docs), framework layout -> device layout, zero padding included: the reference the reader is tested
against. Deliberately slow and literal: one loop over the framework's elements, one index formula each."""

from __future__ import annotations

import itertools
from math import ceil

import numpy as np


def nchw_to_nc1hwc0(x: np.ndarray, c0: int) -> np.ndarray:
    n, c, h, w = x.shape
    out = np.zeros((n, ceil(c / c0), h, w, c0), dtype=x.dtype)
    for i, j, k, m in itertools.product(range(n), range(c), range(h), range(w)):
        out[i, j // c0, k, m, j % c0] = x[i, j, k, m]
    return out


def ncdhw_to_ndc1hwc0(x: np.ndarray, c0: int) -> np.ndarray:
    n, c, d, h, w = x.shape
    out = np.zeros((n, d, ceil(c / c0), h, w, c0), dtype=x.dtype)
    for i, j, z, k, m in itertools.product(range(n), range(c), range(d), range(h), range(w)):
        out[i, z, j // c0, k, m, j % c0] = x[i, j, z, k, m]
    return out


def nd_to_fractal_nz(x: np.ndarray, m0: int = 16, n0: int = 16) -> np.ndarray:
    """[..., M, N] -> [..., ceil(N/n0), ceil(M/m0), m0, n0]; element (m, n) at (n // n0, m // m0, m % m0, n % n0)."""
    matrix = x.reshape(1, -1) if x.ndim == 1 else x
    *batch, rows, cols = matrix.shape
    out = np.zeros((*batch, ceil(cols / n0), ceil(rows / m0), m0, n0), dtype=x.dtype)
    for index in itertools.product(*(range(b) for b in batch), range(rows), range(cols)):
        *b, r, col = index
        out[(*b, col // n0, r // m0, r % m0, col % n0)] = matrix[index]
    return out


def hwcn_to_fractal_z(x: np.ndarray, c0: int = 16, n0: int = 16) -> np.ndarray:
    """Weights (H, W, C, N) -> (C1*H*W, ceil(N/n0), n0, c0); (h, w, c, n) at
    ((c // c0) * H * W + h * W + w, n // n0, n % n0, c % c0)."""
    h, w, c, n = x.shape
    out = np.zeros((ceil(c / c0) * h * w, ceil(n / n0), n0, c0), dtype=x.dtype)
    for i, j, k, m in itertools.product(range(h), range(w), range(c), range(n)):
        out[(k // c0) * h * w + i * w + j, m // n0, m % n0, k % c0] = x[i, j, k, m]
    return out
