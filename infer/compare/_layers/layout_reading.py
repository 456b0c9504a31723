"""An ONNX tensor read in its TF tensor's layout: the layout the conversion's moves give it
(`infer.compare._layers.layouts`) decides, even where the shape would fit another (H = W = C); where the layout is
not known, the tensor is not compared and its row says why. One line never says two things: a layout is named only
where it is the one read."""

from __future__ import annotations

import numpy as np

from infer.compare._layers.layouts import (
    Layout,
    describe_layout,
    identity,
    order_preserving,
    read_in_tf_layout,
    tf_shape_for,
)


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
        fitting = only_fitting_layout(shape, onnx_shape) if layout.shape_decides else None
        if fitting is None:
            more = "; its shape fits more than one reading, or none" if layout.shape_decides else ""
            return None, f"layout unknown: {layout.unknown_reason}{more}"
        reading = read_in_tf_layout(shape, actual, fitting)
        if reading is None:  # pragma: no cover - the layout was built to fit the shape
            return None, f"layout unknown: {layout.unknown_reason}"
        # Tracking stopped at an op of TF's own on a tensor TF's own transposes moved, which tf2onnx computes in
        # TF's axes: a shape whose non-1 dims all differ can be read one way only; never where it fits two.
        return reading, (f"{describe_layout(fitting)}, the one layout its shape fits (not tracked: "
                         f"{layout.unknown_reason})")
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


def only_fitting_layout(tf_shape: tuple[int, ...], onnx_shape: tuple[int, ...]) -> tuple[int, ...] | None:
    """The one layout (which TF axis each ONNX axis holds) in which `onnx_shape` holds `tf_shape`, where the
    non-1 dims are all different and the same in both (size-1 axes are free); None where the ranks differ, the
    dims are not the same, or one repeats (H = W, say: then several readings fit, and none is taken)."""
    if len(tf_shape) != len(onnx_shape):
        return None
    tf_dims = [dim for dim in tf_shape if dim != 1]
    onnx_dims = [dim for dim in onnx_shape if dim != 1]
    if sorted(tf_dims) != sorted(onnx_dims) or len(set(tf_dims)) != len(tf_dims):
        return None
    axis_of = {dim: axis for axis, dim in enumerate(tf_shape) if dim != 1}
    ones = iter(axis for axis, dim in enumerate(tf_shape) if dim == 1)
    return tuple(axis_of[dim] if dim != 1 else next(ones) for dim in onnx_shape)
