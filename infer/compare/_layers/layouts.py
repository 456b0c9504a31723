"""Each ONNX tensor's layout: how its axes hold the axes of the TensorFlow tensor it stands for, tracked op by op
from the graph inputs, never guessed from a shape.

tf2onnx computes NHWC convolutions in NCHW and moves the layout in several ways: a Transpose; a Reshape where the
transpose only moves size-1 dims (a 1-channel NHWC image is already NCHW in memory, so the transpose to NCHW is a
Reshape: the Keras mini-Xception's 64x64x1 input); Squeeze and Unsqueeze; its optimiser pushing transposes through
elementwise ops. A layout is a permutation `perm` with ``onnx_value = transpose(tf_value, perm)``: ONNX axis i holds
TF axis perm[i]. Size-1 axes hold nothing to order, so two layouts that agree on the other axes read the same
values (`read_in_tf_layout`). What an op does to a layout:

- Transpose composes its perm; a Reshape (or Flatten) whose non-1 dims stay in order is a transpose in disguise
  when the rank stays, else a squeeze or unsqueeze; Squeeze and Unsqueeze drop or insert size-1 axes. Where such
  an op turns the tensor into another TF tensor (rank changed, or the output carries the name of TF's own Reshape,
  Squeeze or ExpandDims), the layout is taken relative to that tensor: its non-1 axes in the order ONNX holds them;
- elementwise ops, Conv, pools, BatchNormalization and the ops tf2onnx rewrites for the layout they get (Concat,
  Slice, Pad...) keep it; reductions drop the reduced axes;
- any other op (MatMul, Gather, a Reshape that regroups dims...) is one tf2onnx wrote for a TF op in TF's axes: fed
  TF's layout, it gives TF's layout; fed anything else, its output's layout is unknown, and said why.

A graph input is in TF's layout unless the conversion says otherwise (tf2onnx's inputs_as_nchw: `starts`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from infer.compare._layers.onnx_graph import OnnxGraph, OnnxNode

Permutation = tuple[int, ...]
Dim = int | str | None  # a static size, a symbolic one (dim_param), or unknown
Shape = tuple[Dim, ...]

NCHW: Permutation = (0, 3, 1, 2)

# Ops whose output axes are their input's axes (elementwise, or NCHW ops fed NCHW): a layout passes through.
_SAME_AXES = frozenset({
    "Relu", "Sigmoid", "Tanh", "Clip", "LeakyRelu", "Elu", "Selu", "Softplus", "Softsign", "HardSigmoid",
    "HardSwish", "PRelu", "Gelu", "Erf", "Cast", "Identity", "Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum",
    "Mean", "Neg", "Abs", "Exp", "Log", "Sqrt", "Reciprocal", "Floor", "Ceil", "Round", "Sign", "Not", "Equal",
    "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "And", "Or", "Where", "Softmax", "LogSoftmax", "Conv",
    "ConvTranspose", "MaxPool", "AveragePool", "LpPool", "BatchNormalization", "InstanceNormalization", "LRN",
    "Dropout", "Concat", "Split", "Slice", "Pad", "Resize", "Upsample", "DepthToSpace", "SpaceToDepth", "Tile",
    "GlobalAveragePool", "GlobalMaxPool", "LpNormalization", "IsNaN", "IsInf", "Sin", "Cos",
})
# Ops that drop axes unless keepdims=1.
_REDUCING = frozenset({"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceSumSquare",
                       "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ArgMax", "ArgMin"})
_RESHAPING = frozenset({"Reshape", "Flatten", "Squeeze", "Unsqueeze"})
# TF ops that only reshape: an ONNX tensor carrying such an op's name holds that op's result.
_TF_RESHAPES = frozenset({"Reshape", "Squeeze", "ExpandDims"})


@dataclass(frozen=True)
class Layout:
    """A tensor's layout relative to its TF tensor, or why it is not known."""

    perm: Permutation | None
    unknown_reason: str = ""
    # Not tracked past an op of TF's own that reads a tensor TF's own transposes moved (a BatchMatMul of an
    # attention head, a Concat of code written for NCHW): tf2onnx computes such an op in TF's axes, so where the
    # shape fits one reading only, that reading is the tensor's (`infer.compare._layers.layout_reading`). Never set
    # where the converter's own moves were lost (a Reshape regrouping an NCHW tensor keeps its shape and changes its
    # order).
    shape_decides: bool = False

    @property
    def known(self) -> bool:
        return self.perm is not None


def unknown(reason: str) -> Layout:
    return Layout(None, reason)


def identity(rank: int) -> Permutation:
    return tuple(range(rank))


def describe_layout(perm: Permutation | None) -> str:
    """How the report names a layout."""
    if perm is None:
        return "layout unknown"
    if perm == identity(len(perm)):
        return "as TensorFlow"
    if perm == NCHW:
        return "NCHW (the converter's)"
    return f"TensorFlow's axes in order {list(perm)}"


def _non1(shape: Shape) -> list[int]:
    return [axis for axis, dim in enumerate(shape) if dim != 1]


def held_order(perm: Permutation, shape: Shape) -> tuple[int, ...]:
    """Where each non-1 axis of a tensor of `shape` held in `perm` lies among TF's non-1 axes: all that tells two
    layouts' values apart (which size-1 axis is which holds nothing)."""
    held = [perm[axis] for axis in _non1(shape)]
    ranked = sorted(held)
    return tuple(ranked.index(tf_axis) for tf_axis in held)


def order_preserving(perm: Permutation, shape: Shape) -> bool:
    """Whether a tensor of `shape` held in `perm` has its values in TF's order (only size-1 axes moved)."""
    order = held_order(perm, shape)
    return order == tuple(sorted(order))


def read_in_tf_layout(tf_shape: tuple[int, ...], actual: np.ndarray, perm: Permutation) -> np.ndarray | None:
    """`actual` (held in `perm`) in TF's layout, or None where its shape does not fit that. Size-1 axes are free
    (tf2onnx's GlobalAveragePool keeps the two that TF's mean drops): the non-1 axes are put in TF's order and the
    result given TF's shape."""
    if actual.ndim != len(perm):
        return None
    if tuple(actual.shape) == tuple(tf_shape) and perm == identity(len(perm)):
        return actual
    axes = _non1(tuple(int(d) for d in actual.shape))
    held = [perm[axis] for axis in axes]
    in_tf_order = sorted(range(len(axes)), key=lambda k: held[k])
    moved = np.transpose(actual.reshape([actual.shape[axis] for axis in axes]), in_tf_order)
    if tuple(moved.shape) != tuple(dim for dim in tf_shape if dim != 1):
        return None
    return moved.reshape(tf_shape)


def moves_only_size1(source: Shape, target: Shape) -> bool | None:
    """Whether a reshape from `source` to `target` keeps the non-1 dims in order (moving only size-1 dims); None
    where shape inference leaves it open. A dim it does not know matches one at the same place where both carry
    the same symbol, or where it is the one such pair (the element count then makes them equal)."""
    ins = [source[axis] for axis in _non1(source)]
    outs = [target[axis] for axis in _non1(target)]
    if len(ins) != len(outs):
        return None if None in ins or None in outs or any(isinstance(d, str) for d in (*ins, *outs)) else False
    open_pairs = 0
    for a, b in zip(ins, outs, strict=True):
        if isinstance(a, int) and isinstance(b, int):
            if a != b:
                return False
        elif a is not None and a == b:
            continue
        elif isinstance(a, int) or isinstance(b, int):
            return None
        else:
            open_pairs += 1
    return True if open_pairs <= 1 else None


def _carried(perm: Permutation, ins: list[int], outs: list[int], rank: int) -> Permutation:
    """The layout of a reshape's output relative to TF's own reshape of the tensor: input axes `ins` land on
    output axes `outs`, and TF keeps them in TF's order, so ONNX holds them in the order `perm` ranks them; the
    other (size-1) axes stay where they are."""
    held = [perm[axis] for axis in ins]
    ranked = sorted(range(len(held)), key=lambda k: held[k])
    rank_of = {k: position for position, k in enumerate(ranked)}
    moved = list(range(rank))
    for k, axis in enumerate(outs):
        moved[axis] = outs[rank_of[k]]
    return tuple(moved)


def tf_shape_for(onnx_shape: tuple[int, ...], perm: Permutation) -> list[int]:
    """The TF shape a tensor of `onnx_shape` held in `perm` stands for."""
    shape = [0] * len(perm)
    for axis, tf_axis in enumerate(perm):
        shape[tf_axis] = onnx_shape[axis]
    return shape


class _Tracker:
    def __init__(self, graph: OnnxGraph, shapes: Mapping[str, Shape], tf_ops: Mapping[str, str]) -> None:
        self.graph, self.shapes, self.tf_ops = graph, shapes, tf_ops
        self.layouts: dict[str, Layout] = {}

    def run(self, starts: Mapping[str, Permutation]) -> dict[str, Layout]:
        for name in self.graph.inputs:
            shape = self.shapes.get(name)
            if name in starts:
                self.layouts[name] = Layout(starts[name])
            elif shape is None:
                self.layouts[name] = unknown(f"shape inference gives no rank for the graph input {name}")
            else:
                self.layouts[name] = Layout(identity(len(shape)))
        for node in self.graph.nodes:
            known = [name for name in node.inputs if name and name in self.layouts]
            if not known:
                continue
            result = self._after(node, known)
            for name in node.outputs:
                if not name:
                    continue
                if name in starts:  # a restart: both sides compute it in the same axes (`same_axes`)
                    self.layouts[name] = Layout(starts[name])
                    continue
                rank = len(self.shapes[name]) if name in self.shapes else None
                if result.perm is not None and rank is not None and rank != len(result.perm):
                    self.layouts[name] = unknown(f"{node.op_type} {node.name} gives rank {rank} from a layout of "
                                                 f"rank {len(result.perm)}")
                else:
                    self.layouts[name] = result
        return self.layouts

    def _after(self, node: OnnxNode, known: list[str]) -> Layout:
        first = self.layouts[known[0]]
        if first.perm is None:
            return first
        if node.op_type == "Transpose":
            order = self.graph.attribute(node, "perm") or list(reversed(range(len(first.perm))))
            return Layout(tuple(first.perm[axis] for axis in order))
        if node.op_type in _SAME_AXES:
            return self._same_axes(node, known)
        if node.op_type in _RESHAPING:
            moved = self._size1_move(node, first.perm)
            if moved is not None:
                return moved
        if node.op_type in _REDUCING or node.op_type == "Squeeze":
            return self._reduced(node, first.perm)
        shape = self.shapes.get(known[0])
        out_shape = self.shapes.get(node.outputs[0]) if node.outputs else None
        in_tf_order = first.perm == identity(len(first.perm)) or (shape is not None and
                                                                  order_preserving(first.perm, shape))
        if out_shape is not None and in_tf_order:
            return Layout(identity(len(out_shape)))
        return unknown(f"{node.op_type} {node.name} reads {known[0]} held as {describe_layout(first.perm)}: how "
                       "its output's axes lie is not tracked through it")

    def _same_axes(self, node: OnnxNode, known: list[str]) -> Layout:
        out = node.outputs[0] if node.outputs else ""
        perms = {name: self.layouts[name].perm for name in known}
        ranks = {name: len(perm) if perm is not None else len(self.shapes.get(name, ())) or None
                 for name, perm in perms.items()}
        rank = len(self.shapes[out]) if out in self.shapes else max((r for r in ranks.values() if r), default=None)
        same_rank = [name for name in known if ranks[name] in (rank, None)]  # a broadcast operand of lower rank aside
        if not same_rank:
            return unknown(f"{node.op_type} {node.name}: shape inference gives no rank that matches its inputs'")
        for name in same_rank:
            if perms[name] is None:
                return self.layouts[name]
        reference = perms[same_rank[0]]
        assert reference is not None
        for name in same_rank[1:]:
            perm = perms[name]
            assert perm is not None
            shape = self.shapes.get(name)
            differs = perm != reference if shape is None else held_order(perm, shape) != held_order(reference, shape)
            if differs:
                return unknown(f"{node.op_type} {node.name} reads {same_rank[0]} held as "
                               f"{describe_layout(reference)} and {name} held as {describe_layout(perm)}")
        return Layout(reference)

    def _size1_move(self, node: OnnxNode, perm: Permutation) -> Layout | None:
        """The layout after a Reshape, Flatten, Squeeze or Unsqueeze that only moves size-1 dims; unknown where
        its shapes do not say whether it does; None where it moves others too."""
        source = self.shapes.get(node.inputs[0]) if node.inputs else None
        out = node.outputs[0] if node.outputs else ""
        target = self.shapes.get(out)
        only_size1 = None if source is None or target is None else moves_only_size1(source, target)
        if only_size1 is None:
            if node.op_type == "Unsqueeze":
                return self._unsqueezed(node, perm)
            if node.op_type == "Squeeze" or out in self.tf_ops:
                return None  # by its axes / TF's own reshape: as any op
            return unknown(f"{node.op_type} {node.name}: shape inference does not give its shapes, so whether it "
                           "stands for a transpose is not known")
        if not only_size1:
            return None
        assert source is not None and target is not None
        ins, outs = _non1(source), _non1(target)
        if len(source) == len(target) and self.tf_ops.get(out) not in _TF_RESHAPES:
            # The same TF tensor: a transpose in disguise. Size-1 output axes take the TF axes of size 1 left.
            spare = [perm[axis] for axis in range(len(source)) if axis not in ins]
            moved = [0] * len(target)
            for axis, tf_axis in zip(outs, (perm[axis] for axis in ins), strict=True):
                moved[axis] = tf_axis
            for axis, tf_axis in zip((a for a in range(len(target)) if a not in outs), spare, strict=True):
                moved[axis] = tf_axis
            return Layout(tuple(moved))
        # Another TF tensor (TF's own reshape, squeeze, expand_dims): it keeps its input's non-1 axes in TF's order.
        return Layout(_carried(perm, ins, outs, len(target)))

    def _unsqueezed(self, node: OnnxNode, perm: Permutation) -> Layout:
        axes: Any = self.graph.attribute(node, "axes")
        if axes is None and len(node.inputs) > 1:
            axes = self.graph.constant_ints(node.inputs[1])
        if axes is None:
            return unknown(f"Unsqueeze {node.name}: where it inserts axes is not a constant")
        rank = len(perm) + len(axes)
        inserted = {a % rank for a in axes}
        kept = [a for a in range(rank) if a not in inserted]
        return Layout(_carried(perm, list(range(len(perm))), kept, rank))

    def _reduced(self, node: OnnxNode, perm: Permutation) -> Layout:
        keepdims = self.graph.attribute(node, "keepdims")
        if node.op_type != "Squeeze" and keepdims != 0:
            return Layout(perm)
        axes: Any = self.graph.attribute(node, "axes")
        if axes is None:
            axes = self.graph.attribute(node, "axis")
        if axes is None and len(node.inputs) > 1:
            axes = self.graph.constant_ints(node.inputs[1])
        if axes is None:
            return unknown(f"{node.op_type} {node.name}: which axes it reduces is not a constant")
        dropped = {a % len(perm) for a in ([axes] if isinstance(axes, int) else axes)}
        kept = [perm[i] for i in range(len(perm)) if i not in dropped]
        order = sorted(kept)
        return Layout(tuple(order.index(axis) for axis in kept))


def track_layouts(graph: OnnxGraph, shapes: Mapping[str, Shape], *, starts: Mapping[str, Permutation] | None = None,
                  tf_ops: Mapping[str, str] | None = None) -> dict[str, Layout]:
    """Every activation tensor's layout, from the graph inputs op by op. `shapes`: each tensor's shape from shape
    inference; `starts`: graph inputs not in TF's layout (default: none), and tensors whose layout is known
    otherwise (restarts: `infer.compare._layers.same_axes`); `tf_ops`: TF tensor name -> its op type,
    for the ONNX tensors that carry TF names."""
    return _Tracker(graph, shapes, tf_ops or {}).run(starts or {})


def shapes_of(inferred: Any) -> dict[str, Shape]:
    """Every tensor's shape that shape inference knows: a dim is its size, its symbol, or None."""
    graph = inferred.graph
    found: dict[str, Shape] = {}
    for value in (*graph.input, *graph.output, *graph.value_info):
        tensor_type = value.type.tensor_type
        if tensor_type.HasField("shape"):
            found[value.name] = tuple(dim.dim_value if dim.HasField("dim_value") else (dim.dim_param or None)
                                      for dim in tensor_type.shape.dim)
    return found
