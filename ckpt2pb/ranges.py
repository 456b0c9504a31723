"""Random ops whose draw cannot change the result: value ranges carried from the samplers through elementwise
ops, and every tensor whose range shrinks to one value becomes that constant.

Dropout with its switch off is the case that matters: TF 1.x wrote ``floor(keep_prob + uniform[0, 1))`` and TF
2.x writes ``uniform[0, 1) >= rate``; with keep_prob fixed at 1 (rate 0) the mask is 1 (true) for any draw, so
the sampler is cut out of the graph. Left in, it would be the converted model's sampler that decides: ONNX
Runtime's can return 1 - 2^-24, for which ``floor(1 + u)`` is 2 in float32 and a unit is doubled, which
TensorFlow's never does (its largest float32 draw is 1 - 2^-23, and 1 + that is below 2). The ranges here are
TensorFlow's: [0, 1) for a uniform sampler, rounding aside.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from binio.graph_types import GraphDef
from binio.spec import node_name
from ckpt2pb import surgery
from ckpt2pb.graphinfo import import_graph, node_readers, topological_order

_UNIFORM_OPS = frozenset({"RandomUniform", "StatelessRandomUniform", "StatelessRandomUniformV2"})
_PASS_OPS = frozenset({"Identity", "Snapshot", "StopGradient", "Cast"})
_FLOAT_TYPES = (1, 2, 19)  # DT_FLOAT, DT_DOUBLE, DT_HALF
_COMPARISONS = frozenset({"GreaterEqual", "Greater", "LessEqual", "Less"})


@dataclass(frozen=True)
class ValueRange:
    """Every element lies in [lo, hi], each end excluded where marked; `random`: it depends on a draw."""

    lo: float
    hi: float
    lo_open: bool = False
    hi_open: bool = False
    random: bool = False

    @property
    def point(self) -> float | None:
        return self.lo if self.lo == self.hi and not (self.lo_open or self.hi_open) else None


def _add(a: ValueRange, b: ValueRange) -> ValueRange:
    return ValueRange(a.lo + b.lo, a.hi + b.hi, a.lo_open or b.lo_open, a.hi_open or b.hi_open, a.random or b.random)


def _negate(a: ValueRange) -> ValueRange:
    return ValueRange(-a.hi, -a.lo, a.hi_open, a.lo_open, a.random)


def _scale(a: ValueRange, factor: float) -> ValueRange:
    if factor == 0:
        return ValueRange(0.0, 0.0, random=a.random)
    scaled = ValueRange(a.lo * factor, a.hi * factor, a.lo_open, a.hi_open, a.random)
    return scaled if factor > 0 else ValueRange(scaled.hi, scaled.lo, a.hi_open, a.lo_open, a.random)


def _floor(a: ValueRange) -> ValueRange:
    top = a.hi - 1 if a.hi_open and float(a.hi).is_integer() else math.floor(a.hi)
    return ValueRange(float(math.floor(a.lo)), float(top), random=a.random)


def _compare(op: str, a: ValueRange, b: ValueRange) -> ValueRange | None:
    """True (1) or false (0) for every element, where the ranges decide it; None where they do not."""
    if op in ("Less", "LessEqual"):
        a, b, op = b, a, "Greater" if op == "Less" else "GreaterEqual"
    always = a.lo > b.hi or (a.lo == b.hi and (op == "GreaterEqual" or a.lo_open or b.hi_open))
    never = a.hi < b.lo or (a.hi == b.lo and (op == "Greater" or a.hi_open or b.lo_open))
    random = a.random or b.random
    return ValueRange(1.0, 1.0, random=random) if always else ValueRange(0.0, 0.0, random=random) if never else None


def _const_range(node: Any) -> ValueRange | None:
    import numpy as np
    import tensorflow as tf

    value = tf.make_ndarray(node.attr["value"].tensor)
    if value.size == 0 or value.dtype.kind not in "fiub":
        return None
    return ValueRange(float(np.min(value)), float(np.max(value)))


def _range_of(node: Any, ranges: dict[str, ValueRange]) -> ValueRange | None:
    data = [ref for ref in node.input if not ref.startswith("^")]
    if node.op == "Const":
        return _const_range(node)
    if node.op in _UNIFORM_OPS and node.attr["dtype"].type in _FLOAT_TYPES:
        return ValueRange(0.0, 1.0, hi_open=True, random=True)
    found = [ranges.get(node_name(ref)) if ref == node_name(ref) or ref.endswith(":0") else None for ref in data]
    args = [a for a in found if a is not None]
    if len(args) != len(found):
        return None
    if node.op == "Cast" and node.attr["DstT"].type not in _FLOAT_TYPES \
            and not (float(args[0].lo).is_integer() and float(args[0].hi).is_integer()):
        return None  # a cast to an integer type truncates
    if node.op in _PASS_OPS and args:
        return args[0]
    if node.op in ("Add", "AddV2") and len(args) == 2:
        return _add(args[0], args[1])
    if node.op == "Sub" and len(args) == 2:
        return _add(args[0], _negate(args[1]))
    if node.op == "Neg":
        return _negate(args[0])
    if node.op == "Floor":
        return _floor(args[0])
    if node.op == "Mul" and len(args) == 2:
        for a, b in ((args[0], args[1]), (args[1], args[0])):
            if b.point is not None:
                return _scale(a, b.point) if not b.random else None
    divisor = args[1].point if node.op == "RealDiv" and len(args) == 2 and not args[1].random else None
    if divisor:
        return _scale(args[0], 1.0 / divisor)
    if node.op in _COMPARISONS and len(args) == 2:
        return _compare(node.op, args[0], args[1])
    return None


def value_ranges(graph_def: GraphDef, nodes: Collection[str] | None = None) -> dict[str, ValueRange]:
    """Per node (of `nodes`, default all), the range its first output's elements lie in, where the ops between it
    and the constants and uniform samplers tell (`ValueRange.random`: it depends on a draw)."""
    ranges: dict[str, ValueRange] = {}
    for node in topological_order(graph_def):
        if nodes is not None and node.name not in nodes:
            continue
        found = _range_of(node, ranges)
        if found is not None:
            ranges[node.name] = found
    return ranges


def fold_decided_draws(graph_def: GraphDef, keep: Collection[str] = ()) -> int:
    """Replaces each tensor computed from a random draw whose value is the same for every draw by a constant of
    its (static) shape, and where a shape is not static (`--batch -1`), each sampler whose draw is seen only
    through such tensors by a fill of its own shape with a value it can draw; returns how many. The samplers
    are then unread, for pruning to remove. `keep`: nodes read from outside (the outputs)."""
    import numpy as np

    ranges = value_ranges(graph_def)
    order = topological_order(graph_def)
    decided = {node.name for node in order if node.name in ranges and ranges[node.name].random
               and ranges[node.name].point is not None and node.op not in _PASS_OPS}
    if not decided:
        return 0
    graph = import_graph(graph_def, "the frozen graph")
    folded = 0
    for node in graph_def.node:
        if node.name not in decided:
            continue
        tensor = graph.get_operation_by_name(node.name).outputs[0]
        if not tensor.shape.is_fully_defined() or len(graph.get_operation_by_name(node.name).outputs) != 1:
            continue
        value = np.full(tensor.shape.as_list(), ranges[node.name].point, dtype=tensor.dtype.as_numpy_dtype)
        node.attr["dtype"].type = tensor.dtype.as_datatype_enum  # make_constant keeps the node's dtype
        surgery.make_constant(node, value)
        folded += 1
    return folded + _fill_hidden_samplers(graph_def, ranges, decided, set(keep))


def _fill_hidden_samplers(graph_def: GraphDef, ranges: dict[str, ValueRange], decided: set[str], keep: set[str]) -> int:
    """Each uniform sampler whose draw reaches nothing but tensors `decided` for every draw (through ops whose
    range is tracked) becomes Fill(its shape, its lowest value): the same results, for any shape, no draw."""
    import numpy as np
    import tensorflow as tf

    consumers = node_readers(graph_def)
    names = {node.name for node in graph_def.node}
    filled = 0
    for node in list(graph_def.node):
        if node.op not in _UNIFORM_OPS or node.name not in ranges or node.name in keep:
            continue
        seen, todo, hidden = set(), [node.name], True
        while todo and hidden:
            name = todo.pop()
            if name in seen or name in decided:
                continue
            seen.add(name)
            readers = consumers.get(name, [])
            # A tensor the draw reaches must be tracked, read, and not an output, or the draw is seen.
            hidden = name in ranges and ranges[name].random and bool(readers) and name not in keep
            todo += readers
        if not hidden:
            continue
        dtype_enum = node.attr["dtype"].type
        index_enum = node.attr["T" if "T" in node.attr else "Tshape"].type
        value = graph_def.node.add()
        value.name = _fresh_name(f"{node.name}/fill_value", names)
        value.op = "Const"
        value.attr["dtype"].type = dtype_enum
        value.attr["value"].tensor.CopyFrom(tf.make_tensor_proto(
            np.array(ranges[node.name].lo, dtype=tf.dtypes.as_dtype(dtype_enum).as_numpy_dtype)))
        shape = node.input[0]
        node.op = "Fill"
        del node.input[:]
        node.input.extend([shape, value.name])
        for key in list(node.attr):
            del node.attr[key]
        node.attr["T"].type = dtype_enum
        node.attr["index_type"].type = index_enum
        filled += 1
    return filled


def _fresh_name(wanted: str, names: set[str]) -> str:
    name, count = wanted, 0
    while name in names:
        count += 1
        name = f"{wanted}_{count}"
    names.add(name)
    return name
