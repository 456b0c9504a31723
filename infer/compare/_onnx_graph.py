"""What the converted ONNX graph says about its tensors: which node computes each, from which tensors, and in
which layout relative to TensorFlow's.

tf2onnx computes NHWC convolutions in NCHW: it puts a Transpose before the ONNX op and one after, then its
optimiser pushes the transposes through elementwise ops and cancels pairs, so a tensor that keeps its TF name may
hold TF's values in NCHW. `tensor_layouts` follows every Transpose from the graph inputs (which are in TF's layout)
to know each tensor's permutation of TF's axes instead of guessing it from the values; where an op reshapes a
permuted tensor, the layout is unknown and said to be.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

# Ops that only move, copy or re-type values: a TF name on their output belongs to the op that computed the values.
SEE_THROUGH = frozenset({"Cast", "Identity", "Transpose"})
# Ops whose output axes are their input's axes (elementwise, or NCHW ops fed NCHW): a permutation passes through.
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

Permutation = tuple[int, ...]


@dataclass(frozen=True)
class OnnxNode:
    name: str
    op_type: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]


class OnnxGraph:
    """The producers and constants of an ONNX graph, for walking it backwards from a tensor."""

    def __init__(self, model: Any) -> None:
        graph = model.graph
        self.nodes = tuple(OnnxNode(n.name, n.op_type, tuple(n.input), tuple(n.output)) for n in graph.node)
        self.inputs = tuple(i.name for i in graph.input if i.name not in {t.name for t in graph.initializer})
        self.outputs = tuple(o.name for o in graph.output)
        self.producer = {name: node for node in self.nodes for name in node.outputs if name}
        self.readers: dict[str, list[OnnxNode]] = {}
        for node in self.nodes:
            for name in dict.fromkeys(n for n in node.inputs if n):
                self.readers.setdefault(name, []).append(node)
        constants = {t.name for t in graph.initializer}
        # A tensor computed from constants only (tf2onnx's folded shapes, Constant nodes) is no activation.
        for node in self.nodes:
            if all(not name or name in constants for name in node.inputs):
                constants.update(node.outputs)
        self.constants = frozenset(constants)
        self._attributes = {n.name: n.attribute for n in graph.node}
        self._initializers = {t.name: t for t in graph.initializer}

    def computing_node(self, tensor: str) -> OnnxNode | None:
        """The node that computed the values `tensor` holds: its producer, looking through casts (the fp16
        emulation's), identities and transposes."""
        node = self.producer.get(tensor)
        while node is not None and node.op_type in SEE_THROUGH and node.inputs:
            upstream = self.producer.get(node.inputs[0])
            if upstream is None:
                return node
            node = upstream
        return node

    def frontier(self, node: OnnxNode, stops: Iterable[str] | set[str]) -> frozenset[str]:
        """The tensors in `stops` (graph inputs, tensors already matched to TF) that `node` reads, directly or
        through tensors not in `stops`; constants are left out."""
        stop = stops if isinstance(stops, set) else set(stops)
        found: set[str] = set()
        seen: set[str] = set()
        pending = [name for name in node.inputs if name]
        while pending:
            name = pending.pop()
            if name in seen or name in self.constants:
                continue
            seen.add(name)
            if name in stop or name in self.inputs:
                found.add(name)
                continue
            upstream = self.producer.get(name)
            if upstream is not None:
                pending.extend(n for n in upstream.inputs if n)
        return frozenset(found)

    def _attribute(self, node: OnnxNode, name: str) -> Any:
        from onnx import helper

        for attribute in self._attributes.get(node.name, ()):
            if attribute.name == name:
                return helper.get_attribute_value(attribute)
        return None

    def _constant_ints(self, name: str) -> tuple[int, ...] | None:
        from onnx import numpy_helper

        tensor = self._initializers.get(name)
        return None if tensor is None else tuple(int(v) for v in numpy_helper.to_array(tensor).ravel())

    def tensor_layouts(self, ranks: dict[str, int]) -> dict[str, Permutation | None]:
        """Each activation tensor's permutation of TF's axes (``onnx_value = transpose(tf_value, perm)``), or None
        where it cannot be known. `ranks`: every tensor's rank, from shape inference."""
        layouts: dict[str, Permutation | None] = {
            name: tuple(range(ranks[name])) if name in ranks else None for name in self.inputs}
        for node in self.nodes:
            known = [name for name in node.inputs if name and name in layouts]
            if not known:
                continue
            result = self._layout_after(node, known, layouts, ranks)
            for name in node.outputs:
                if name:
                    layouts[name] = result if result is None or len(result) == ranks.get(name, len(result)) else None
        return layouts

    def _layout_after(self, node: OnnxNode, known: list[str], layouts: dict[str, Permutation | None],
                      ranks: dict[str, int]) -> Permutation | None:
        first = layouts[known[0]]
        out_rank = ranks.get(node.outputs[0]) if node.outputs else None
        if node.op_type == "Transpose":
            if first is None:
                return None
            order = self._attribute(node, "perm") or list(reversed(range(len(first))))
            return tuple(first[axis] for axis in order)
        if node.op_type in _SAME_AXES:
            same_rank = [layouts[name] for name in known if ranks.get(name) == out_rank]
            if not same_rank or any(p is None or p != same_rank[0] for p in same_rank):
                return None
            return same_rank[0]
        if node.op_type in _REDUCING or node.op_type == "Squeeze":
            return self._reduced_layout(node, first)
        # Any other op (MatMul, Reshape, Gather, ...) is one tf2onnx wrote for a TF op in TF's axes: its data input
        # in TF's layout gives its output in TF's layout (an operand it transposes is part of its computation).
        if first is not None and first == tuple(range(len(first))) and out_rank is not None:
            return tuple(range(out_rank))
        return None

    def _reduced_layout(self, node: OnnxNode, layout: Permutation | None) -> Permutation | None:
        if layout is None:
            return None
        keepdims = self._attribute(node, "keepdims")
        if node.op_type != "Squeeze" and keepdims != 0:
            return layout
        axes = self._attribute(node, "axes") or self._attribute(node, "axis")
        if axes is None and len(node.inputs) > 1:
            axes = self._constant_ints(node.inputs[1])
        if axes is None:
            return None
        dropped = {a % len(layout) for a in ([axes] if isinstance(axes, int) else axes)}
        kept = [layout[i] for i in range(len(layout)) if i not in dropped]
        order = sorted(kept)
        return tuple(order.index(axis) for axis in kept)


def ranks_of(inferred: Any) -> dict[str, int]:
    """Every tensor's rank that shape inference knows."""
    graph = inferred.graph
    found = {}
    for value in (*graph.input, *graph.output, *graph.value_info):
        tensor_type = value.type.tensor_type
        if tensor_type.HasField("shape"):
            found[value.name] = len(tensor_type.shape.dim)
    return found


def describe_layout(layout: Permutation | None) -> str:
    """How the report names a permutation of TF's axes."""
    if layout is None:
        return "unknown"
    if layout == tuple(range(len(layout))):
        return "as TensorFlow"
    if layout == (0, 3, 1, 2):
        return "NCHW (the converter's)"
    return f"TensorFlow's axes in order {list(layout)}"
