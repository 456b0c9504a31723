"""Layer-wise pieces that need no model: reading an ONNX tensor in TensorFlow's layout."""

from __future__ import annotations

import numpy as np

from infer.compare.layerwise import aligned_to_golden


def test_nchw_tensor_is_read_back_as_nhwc() -> None:
    golden = np.random.default_rng(0).normal(size=(2, 5, 6, 3)).astype(np.float32)
    aligned = aligned_to_golden(golden, np.transpose(golden, (0, 3, 1, 2)))
    assert aligned is not None and np.array_equal(aligned, golden)


def test_equal_h_w_c_takes_the_reading_closer_to_tensorflow() -> None:
    """(8, 16, 16, 16): NHWC and NCHW have the same shape, as the demo's pooled stem has."""
    golden = np.random.default_rng(1).normal(size=(2, 4, 4, 4)).astype(np.float32)
    nchw = np.transpose(golden, (0, 3, 1, 2)).astype(np.float16)  # fp16-rounded, in the other layout
    aligned = aligned_to_golden(golden, nchw)
    assert aligned is not None and np.max(np.abs(aligned - golden)) < 1e-2
    same_layout = golden.astype(np.float16)
    assert aligned_to_golden(golden, same_layout) is same_layout


def test_unrelated_shape_is_unmatched() -> None:
    assert aligned_to_golden(np.zeros((2, 4, 4, 3)), np.zeros((2, 4, 3, 4))) is None
    assert aligned_to_golden(np.zeros((2, 5)), np.zeros((5, 2))) is None
