"""Damages applied to a converted (ONNX) model at a named layer, as a faulty converter, a wrong weight file or a
mistyped constant would leave it. The layer is named by its TensorFlow node; the ONNX node that computes it is
found by tf2onnx's naming (its output carries the TF tensor's name, through the fp16 emulation's Casts, or the node
is named after the TF node it came from, as the Gemm tf2onnx fuses from MatMul + BiasAdd is).

A damage is `damage(model, frozen, rng)`: it edits the ONNX `model` in place; `frozen` reads constants of the
frozen TensorFlow graph (a batch norm folded into its Conv by tf2onnx is damaged through its own constants: mean,
variance, epsilon), `rng` makes noise reproducible. Each factory returns one, with the text a report shows."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

Edit = Callable[[Any, "FrozenGraph", np.random.Generator], None]


@dataclass(frozen=True)
class Damage:
    description: str  # what was done, for the report: "weight x1.04"
    edit: Edit
    layer: str = ""  # the TF node whose ONNX node was damaged ("": every layer, or none)

    def __call__(self, model: Any, frozen: FrozenGraph, rng: np.random.Generator) -> None:
        self.edit(model, frozen, rng)


class FrozenGraph:
    """The frozen TensorFlow graph's constants, by node name (Identity chains followed)."""

    def __init__(self, graph_def: Any) -> None:
        self.nodes = {node.name: node for node in graph_def.node}

    def node(self, name: str) -> Any:
        node = self.nodes[name]
        while node.op == "Identity":
            node = self.nodes[node.input[0].split(":")[0].lstrip("^")]
        return node

    def constant(self, name: str) -> np.ndarray:
        import tensorflow as tf

        node = self.node(name)
        if node.op != "Const":
            raise ValueError(f"{name}: a {node.op}, not a constant")
        return np.asarray(tf.make_ndarray(node.attr["value"].tensor))

    def input_constant(self, name: str, position: int) -> np.ndarray:
        return self.constant(self.node(name).input[position].split(":")[0])


# ---- Finding what computes a TF node in the ONNX graph. ----

def onnx_node(model: Any, tf_node: str) -> Any:
    """The ONNX node computing `tf_node`: the producer of `tf_node:0` (looking through Casts the emulation put
    after it), else the node tf2onnx named after it (`fc/matmul_Gemm__1` for `fc/matmul`)."""
    producers = {output: node for node in model.graph.node for output in node.output}
    node = producers.get(f"{tf_node}:0")
    while node is not None and node.op_type == "Cast" and node.input[0] in producers:
        node = producers[node.input[0]]
    if node is not None:
        return node
    named = [n for n in model.graph.node if n.op_type != "Cast"  # the emulation's roundings carry its name too
             and (n.name == tf_node or n.name.startswith(f"{tf_node}_"))]
    if len(named) != 1:
        raise KeyError(f"no single ONNX node computes {tf_node}: {[n.name for n in named]}")
    return named[0]


def initializer(model: Any, name: str) -> np.ndarray:
    from onnx import numpy_helper

    for tensor in model.graph.initializer:
        if tensor.name == name:
            return np.asarray(numpy_helper.to_array(tensor)).copy()
    raise KeyError(f"{name} is not an initializer")


def set_initializer(model: Any, name: str, values: np.ndarray) -> None:
    from onnx import numpy_helper

    for index, tensor in enumerate(model.graph.initializer):
        if tensor.name == name:
            dtype = numpy_helper.to_array(tensor).dtype
            model.graph.initializer[index].CopyFrom(numpy_helper.from_array(values.astype(dtype), name))
            return
    raise KeyError(f"{name} is not an initializer")


def own_input(model: Any, node: Any, position: int) -> str:
    """The initializer `node` reads at `position`, refused where another node reads it too (tf2onnx shares equal
    constants, as every Clip's bounds): a damage at one layer must not reach another."""
    name = node.input[position]
    readers = [other.name for other in model.graph.node if name in other.input]
    if readers != [node.name]:
        raise ValueError(f"{name} is read by {readers}, not by {node.name} alone")
    return str(name)


def _edit_input(model: Any, tf_node: str, position: int, change: Callable[[np.ndarray], np.ndarray]) -> None:
    node = onnx_node(model, tf_node)
    name = own_input(model, node, position)
    set_initializer(model, name, change(initializer(model, name)))


def _out_axis(node: Any, values: np.ndarray) -> int:
    """The output-channel axis of a weight: OIHW for Conv, (in, out) for MatMul and for Gemm without transB."""
    if node.op_type == "Gemm" and any(a.name == "transB" and a.i == 1 for a in node.attribute):
        return 0
    return 0 if node.op_type == "Conv" else values.ndim - 1


# ---- The damages. ----

def scaled_weight(tf_node: str, factor: float) -> Damage:
    """The layer's weight (Conv, Gemm or MatMul input 1) times `factor`."""
    return Damage(f"weight x{factor:g}", lambda m, f, r: _edit_input(m, tf_node, 1, lambda w: w * factor),
                  layer=tf_node)


def noisy_weight(tf_node: str, fraction: float) -> Damage:
    """Each weight moved by normal noise of `fraction` times the weights' own spread."""
    def edit(model: Any, frozen: FrozenGraph, rng: np.random.Generator) -> None:
        _edit_input(model, tf_node, 1,
                    lambda w: w + rng.normal(scale=fraction * float(np.std(w)), size=w.shape))
    return Damage(f"weight + {fraction:.0%} noise", edit, layer=tf_node)


def zeroed_bias(tf_node: str) -> Damage:
    """The layer's bias (Conv or Gemm input 2) zeroed: a bias the converter lost."""
    return Damage("bias zeroed", lambda m, f, r: _edit_input(m, tf_node, 2, np.zeros_like), layer=tf_node)


def _per_channel(model: Any, tf_node: str, change: Callable[[np.ndarray, int], np.ndarray]) -> None:
    """`change(values, axis)` applied to the weight and (where there is one) the bias, by output channel."""
    node = onnx_node(model, tf_node)
    weight = initializer(model, own_input(model, node, 1))
    axis = _out_axis(node, weight)
    set_initializer(model, node.input[1], change(weight, axis))
    if len(node.input) > 2:
        set_initializer(model, node.input[2], change(initializer(model, own_input(model, node, 2)), 0))


def swapped_channels(tf_node: str, first: int, second: int) -> Damage:
    """Two output channels swapped (weight and bias): a layout mix-up on one layer."""
    def change(values: np.ndarray, axis: int) -> np.ndarray:
        order = np.arange(values.shape[axis])
        order[[first, second]] = order[[second, first]]
        return np.take(values, order, axis=axis)
    return Damage(f"channels {first} and {second} swapped",
                  lambda m, f, r: _per_channel(m, tf_node, change), layer=tf_node)


def flipped_channel(tf_node: str, channel: int) -> Damage:
    """One output channel's weights and bias negated: a sign error on one filter."""
    def change(values: np.ndarray, axis: int) -> np.ndarray:
        index: list[Any] = [slice(None)] * values.ndim
        index[axis] = channel
        values[tuple(index)] = -values[tuple(index)]
        return values
    return Damage(f"channel {channel}'s sign flipped", lambda m, f, r: _per_channel(m, tf_node, change),
                  layer=tf_node)


def _batch_norm(frozen: FrozenGraph, bn_node: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """(scale, offset, variance, epsilon) of a FusedBatchNorm in the frozen graph."""
    node = frozen.node(bn_node)
    return (frozen.input_constant(bn_node, 1), frozen.input_constant(bn_node, 2),
            frozen.input_constant(bn_node, 4), float(node.attr["epsilon"].f))


def batch_norm_epsilon(bn_node: str, epsilon: float) -> Damage:
    """The batch norm computed with another epsilon. tf2onnx folds it into the Conv before it (weight times
    scale / sqrt(variance + eps), bias offset + (bias - mean) times the same), so each output channel of the folded
    weight and of the folded bias less the offset is rescaled by sqrt((variance + eps) / (variance + epsilon))."""
    def edit(model: Any, frozen: FrozenGraph, rng: np.random.Generator) -> None:
        _, offset, variance, old = _batch_norm(frozen, bn_node)
        factor = np.sqrt((variance + old) / (variance + epsilon))
        node = onnx_node(model, bn_node)
        weight = initializer(model, own_input(model, node, 1))
        set_initializer(model, node.input[1], weight * factor.reshape((-1,) + (1,) * (weight.ndim - 1)))
        bias = initializer(model, own_input(model, node, 2))
        set_initializer(model, node.input[2], offset + (bias - offset) * factor)
    return Damage(f"batch-norm epsilon {epsilon:g}", edit, layer=bn_node)


def batch_norm_mean(bn_node: str, shift: float) -> Damage:
    """The batch norm's moving mean moved by `shift` times each channel's standard deviation (folded: the bias less
    scale * shift * std / sqrt(variance + eps))."""
    def edit(model: Any, frozen: FrozenGraph, rng: np.random.Generator) -> None:
        scale, _, variance, epsilon = _batch_norm(frozen, bn_node)
        node = onnx_node(model, bn_node)
        bias = initializer(model, own_input(model, node, 2))
        moved = shift * np.sqrt(variance) * rng.choice([-1.0, 1.0], size=variance.shape)
        set_initializer(model, node.input[2], bias - scale * moved / np.sqrt(variance + epsilon))
    return Damage(f"batch-norm mean + {shift:g} std", edit, layer=bn_node)


def replaced_op(tf_node: str, op_type: str, **attributes: float | int) -> Damage:
    """The layer's op replaced by another reading the same inputs (a wrong activation). Inputs past the first are
    dropped where the new op does not take them (Clip's bounds for a Relu)."""
    def edit(model: Any, frozen: FrozenGraph, rng: np.random.Generator) -> None:
        from onnx import helper

        node = onnx_node(model, tf_node)
        if op_type in ("Relu", "Sigmoid", "Tanh", "LeakyRelu", "Elu", "Softplus"):
            del node.input[1:]
        node.op_type = op_type
        del node.attribute[:]
        node.attribute.extend(helper.make_attribute(key, value) for key, value in attributes.items())
    attrs = "".join(f" {key}={value:g}" for key, value in attributes.items())
    return Damage(f"op made {op_type}{attrs}", edit, layer=tf_node)


def changed_attribute(tf_node: str, name: str, value: int | float) -> Damage:
    """One attribute of the layer's op set to `value` (a softmax over the wrong axis)."""
    def edit(model: Any, frozen: FrozenGraph, rng: np.random.Generator) -> None:
        from onnx import helper

        node = onnx_node(model, tf_node)
        kept = [a for a in node.attribute if a.name != name]
        del node.attribute[:]
        node.attribute.extend([*kept, helper.make_attribute(name, value)])
    return Damage(f"{name}={value}", edit, layer=tf_node)


def scaled_constant(tf_node: str, position: int, factor: float) -> Damage:
    """A constant operand of an elementwise op (input `position`) times `factor`: a mistyped scale or epsilon."""
    return Damage(f"constant x{factor:g}",
                  lambda m, f, r: _edit_input(m, tf_node, position, lambda c: c * factor), layer=tf_node)


def zeroed_constant(tf_node: str, position: int) -> Damage:
    """A constant operand of an elementwise op zeroed: a layer norm's offset lost."""
    return Damage("constant zeroed", lambda m, f, r: _edit_input(m, tf_node, position, np.zeros_like),
                  layer=tf_node)


def dropped_input(tf_node: str, kept: int) -> Damage:
    """A two-input op (a residual Add) made an Identity of input `kept`: the skip connection dropped."""
    def edit(model: Any, frozen: FrozenGraph, rng: np.random.Generator) -> None:
        node = onnx_node(model, tf_node)
        keep = node.input[kept]
        del node.input[:]
        node.input.append(keep)
        node.op_type = "Identity"
        del node.attribute[:]
    return Damage("residual add dropped", edit, layer=tf_node)


def fp16_jitter() -> Damage:
    """Not damage: every weight stored as fp16 values moved by at most one fp16 step, at random, as a device that
    rounds otherwise (another rounding of the same fp32 weights) would store it. A control: the error stays what
    the precision explains, and nothing should be marked."""
    def edit(model: Any, frozen: FrozenGraph, rng: np.random.Generator) -> None:
        from onnx import numpy_helper

        for tensor in list(model.graph.initializer):
            values = numpy_helper.to_array(tensor)
            if values.dtype != np.float32 or values.size < 2:
                continue
            half = values.astype(np.float16)
            if not np.array_equal(half.astype(np.float32), values):
                continue
            step = np.spacing(np.abs(half)).astype(np.float32)
            moved = values + step * rng.integers(-1, 2, size=values.shape)
            set_initializer(model, tensor.name, moved)
    return Damage("fp16 weights moved by one step", edit)
