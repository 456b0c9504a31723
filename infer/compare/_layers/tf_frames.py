"""TF's own layout moves: a Transpose the model itself does (code written for NCHW, a swap of H and W) changes which
axes a TF tensor's axes are, so an ONNX tensor's layout is known relative to TF's only with TF's moves counted too.

`infer.compare._layers.layouts` tracks each ONNX tensor's axes from the graph inputs' axes, every Transpose counted
(tf2onnx turns TF's own into ONNX ones and merges them with its own, or pushes them through elementwise ops: the
name a TF op kept may then hold its values before TF's transpose). Here the same is done on the TF side, through TF's
Transposes (`tf_frames`), and the two composed (`relative_to_tf`). Tensors no TF Transpose precedes are in the
inputs' axes on both sides and need nothing.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Protocol

from infer.compare._layers.layouts import Layout, Permutation, describe_layout, unknown

# TF ops whose output axes are their input's axes (in the model's own data format).
_TF_SAME_AXES = frozenset({
    "Relu", "Relu6", "Elu", "Selu", "LeakyRelu", "Sigmoid", "Tanh", "Softplus", "Softsign", "Identity", "Cast",
    "Add", "AddV2", "AddN", "Sub", "Mul", "RealDiv", "Div", "Maximum", "Minimum", "SquaredDifference", "Square",
    "Sqrt", "Rsqrt", "Reciprocal", "Exp", "Log", "Pow", "Neg", "Abs", "Erf", "Floor", "Ceil", "Round", "Sin", "Cos",
    "BiasAdd", "BiasAddV1", "Conv2D", "DepthwiseConv2dNative", "Conv2DBackpropInput", "MaxPool", "AvgPool",
    "FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3", "LRN", "Pad", "PadV2", "MirrorPad",
})

# TF ops that drop the axes they are given (unless keep_dims); a Squeeze drops its squeeze_dims.
_TF_REDUCING = frozenset({"Mean", "Sum", "Max", "Min", "Prod", "ArgMax", "ArgMin", "All", "Any", "Squeeze"})

Frame = Permutation | str  # the input axes each axis holds, or why that is not known


class FramedTensor(Protocol):
    """What is read of a TF tensor (`infer.compare._layers.tensors.GraphTensor`)."""

    @property
    def name(self) -> str: ...
    @property
    def op_type(self) -> str: ...
    @property
    def inputs(self) -> tuple[str, ...]: ...
    @property
    def axes(self) -> tuple[int, ...] | None: ...
    @property
    def keep_dims(self) -> bool: ...


def tf_frames(tensors: Sequence[FramedTensor], activations: set[str],
              restarts: Collection[str] = ()) -> dict[str, Frame]:
    """The TF tensors downstream of a TF Transpose: the graph inputs' axes each of their axes holds (TF axis j
    holds input axis frame[j]), or why that is not known. Tensors not listed hold the inputs' axes; so do the
    `restarts`, tensors both sides compute in the same axes (`infer.compare._layers.same_axes`): what follows
    them counts from their axes, on both sides."""
    frames: dict[str, Frame] = {}
    for tensor in tensors:
        if tensor.name in restarts:
            continue
        framed = [frames[name] for name in tensor.inputs if name in frames]
        if tensor.op_type in ("Transpose", "ConjugateTranspose"):
            perm = tensor.axes
            source = frames.get(tensor.inputs[0]) if tensor.inputs else None
            if perm is None:
                frames[tensor.name] = f"TF's own Transpose {tensor.name} has no constant perm"
            elif isinstance(source, str):
                frames[tensor.name] = source
            else:
                moved = perm if source is None else tuple(source[axis] for axis in perm)
                if moved != tuple(range(len(moved))):
                    frames[tensor.name] = moved
            continue
        source = frames.get(tensor.inputs[0]) if tensor.inputs else None
        if source is not None and tensor.op_type in _TF_REDUCING:
            reduced = _reduced(source, tensor)
            if reduced != tuple(range(len(reduced))):
                frames[tensor.name] = reduced
            continue
        if not framed:
            continue
        reason = next((frame for frame in framed if isinstance(frame, str)), "")
        if reason:
            frames[tensor.name] = reason
            continue
        plain = [name for name in tensor.inputs if name in activations and name not in frames]
        if tensor.op_type in _TF_SAME_AXES and not plain and len(set(framed)) == 1:
            frames[tensor.name] = framed[0]
        else:
            moved_by = next(name for name in tensor.inputs if name in frames)
            first = framed[0]
            assert not isinstance(first, str)
            frames[tensor.name] = (f"{tensor.op_type} {tensor.name} reads {moved_by}, which TF's own transposes "
                                   f"hold as {describe_layout(first)} of the inputs' axes: how its output's axes "
                                   "lie is not tracked through it")
    return frames


def _reduced(source: Frame, tensor: FramedTensor) -> Frame:
    """The frame after a reduction or Squeeze of a tensor in `source`: the dropped axes gone, the others counted
    again among themselves (as the ONNX side counts them, `infer.compare._layers.layouts`)."""
    if isinstance(source, str):
        return source
    if tensor.keep_dims and tensor.op_type != "Squeeze":
        return source
    if tensor.axes is None or (tensor.op_type == "Squeeze" and not tensor.axes):
        return f"{tensor.op_type} {tensor.name}: which axes it drops is not a constant"
    dropped = {axis % len(source) for axis in tensor.axes}
    kept = [source[axis] for axis in range(len(source)) if axis not in dropped]
    order = sorted(kept)
    return tuple(order.index(axis) for axis in kept)


def relative_to_tf(layout: Layout | None, frame: Frame) -> Layout:
    """An ONNX tensor's layout relative to its TF tensor, from both sides' axes relative to the inputs'."""
    if isinstance(frame, str):
        return Layout(None, frame, shape_decides=True)
    if layout is None or layout.perm is None:
        return layout if layout is not None else unknown("the ONNX graph does not compute it from its inputs")
    if len(layout.perm) != len(frame):
        return unknown(f"rank {len(layout.perm)} in ONNX, {len(frame)} in TensorFlow's transposed tensor")
    return Layout(tuple(frame.index(axis) for axis in layout.perm))
