"""What the converted ONNX graph says about its tensors: which node computes each, from which tensors, and its
nodes' attributes and constants (the layout of each tensor is `infer.compare._layers.layouts`'s)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from atc_wrap.standin.subgraphs import outer_reads

# Ops that only move, copy or re-type values: a TF name on their output belongs to the op that computed the values.
SEE_THROUGH = frozenset({"Cast", "Identity", "Transpose"})


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
        # An If or Loop reads what its bodies read from this graph too (a Loop's steps, an LSTM's weights): counted
        # past its own inputs, so its outputs are computed from them here as they are in TensorFlow.
        self.nodes = tuple(OnnxNode(n.name, n.op_type, (*n.input, *(r for r in outer_reads(n) if r not in n.input)),
                                    tuple(n.output)) for n in graph.node)
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

    def attribute(self, node: OnnxNode, name: str) -> Any:
        from onnx import helper

        for attribute in self._attributes.get(node.name, ()):
            if attribute.name == name:
                return helper.get_attribute_value(attribute)
        return None

    def constant_ints(self, name: str) -> tuple[int, ...] | None:
        from onnx import numpy_helper

        tensor = self._initializers.get(name)
        return None if tensor is None else tuple(int(v) for v in numpy_helper.to_array(tensor).ravel())
