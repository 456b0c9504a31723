"""An ONNX tensor read in its TF tensor's layout: the layout the conversion's moves give it (`infer.compare._layouts`)
decides, even where the shape would fit another (H = W = C); where the layout is not known, the tensor is not
compared and its row says why. One line never says two things: a layout is named only where it is the one read."""

from __future__ import annotations

import numpy as np

from infer.compare._layouts import Layout, describe_layout, identity, order_preserving, read_in_tf_layout, tf_shape_for


def aligned_to_golden(golden: np.ndarray, actual: np.ndarray, layout: Layout | None = None, *,
                      as_is: bool = False) -> tuple[np.ndarray | None, str]:
    """`actual` in `golden`'s layout, and the layout it was read in; None (with the reason) when it cannot be.

    A model output (`as_is`) is compared as the model gives it: a layout bug there is the user's problem, not
    noise; where the conversion's moves leave it permuted, the layout says so."""
    shape = tuple(int(d) for d in golden.shape)
    onnx_shape = tuple(int(d) for d in actual.shape)
    if as_is:
        if onnx_shape != shape:
            return None, f"the model gives shape {list(onnx_shape)}, TensorFlow {list(shape)}"
        if layout is None or layout.perm is None:
            return actual, "as the model gives it"
        if not order_preserving(layout.perm, onnx_shape):
            return actual, (f"as the model gives it, which is {describe_layout(layout.perm)}: a transpose back to "
                            "TensorFlow's layout is missing")
        return actual, describe_layout(identity(len(shape)))
    if layout is None:
        return None, "layout unknown: the ONNX graph does not compute it from its inputs"
    if layout.perm is None:
        return None, f"layout unknown: {layout.unknown_reason}"
    reading = read_in_tf_layout(shape, actual, layout.perm)
    if reading is None:
        if actual.ndim != len(layout.perm) or actual.ndim != golden.ndim:
            return None, (f"shape {list(onnx_shape)} in ONNX does not hold TensorFlow's {list(shape)} in the layout "
                          f"tracked for it ({describe_layout(layout.perm)}), size-1 axes aside")
        return None, (f"shape {list(onnx_shape)} in ONNX does not hold TensorFlow's {list(shape)} in the layout "
                      f"tracked for it ({describe_layout(layout.perm)}, which would hold "
                      f"{tf_shape_for(onnx_shape, layout.perm)})")
    if actual.ndim != golden.ndim:
        return reading, (f"{describe_layout(layout.perm)}, held as {list(onnx_shape)} (the same values, size-1 axes "
                         "aside)")
    return reading, describe_layout(layout.perm)
