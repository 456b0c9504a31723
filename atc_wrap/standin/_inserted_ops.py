"""Which TF ops a node computes that tf2onnx made under a name of its own (no TF node's).

Some ONNX nodes stand for TF ops without bearing their names: tf2onnx fuses a MatMul and the Add after it into one
Gemm named ``MatMul_Gemm__6``, and converts a DepthwiseConv2dNative into a ``Conv__35`` into which its optimiser
then folds the BiasAdd. Taken for nodes the converter inserted, such a node followed its inputs and the weights it
alone reads were taken as read in fp16, so a model whose every op the plan keeps in fp32 still had weights rounded.

What such a node computes is found from the TF tensors around it: the TF nodes it reads (through the helpers
tf2onnx puts between, which carry no TF name of their own) and the TF nodes reading what it makes. The TF ops it
stands for lie between those in the pb, and have no ONNX node of their own. Its rule is theirs: it reads as the
first one does and stores as the last one does (`atc_wrap.standin._fused_ops` does the same for a node named after
the last op of a pair).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from atc_wrap.precision.op_types import ONNX_OPS_OF_TF
from atc_wrap.standin.subgraphs import subgraphs
from binio.graph_types import GraphDef
from binio.names import node_name

_THROUGH = 4  # nodes without a TF name of their own, in a row, looked through to the TF tensors around a node
_LAYOUT = frozenset({"Transpose", "Reshape", "Identity", "Squeeze", "Unsqueeze", "Flatten", "Cast"})


def inserted_ops(model: Any, graph_def: GraphDef, origin: Mapping[str, str | None]) -> dict[str, tuple[str, ...]]:
    """ONNX node name -> the TF nodes it computes, first (what reads the node's inputs) to last, for the nodes of
    the main graph that `origin` (ONNX node -> its TF node, `atc_wrap.standin.emulation.tf_origin`) gives none and
    that compute: not a layout move, not a node holding subgraphs."""
    graph = model.graph
    tf_nodes = {node.name: node for node in graph_def.node}

    def helper(node: Any) -> bool:
        """A transpose or reshape tf2onnx put around a TF op that computes (NHWC <-> NCHW): it only moves values."""
        tf = origin.get(node.name)
        return node.op_type in _LAYOUT and (tf is None or _computes(tf_nodes[tf].op if tf in tf_nodes else ""))

    owned = {tf for tf in (origin.get(node.name) for node in graph.node if not helper(node)) if tf is not None}
    producer = {output: node for node in graph.node for output in node.output if output}
    readers: dict[str, list[Any]] = {}
    for node in graph.node:
        for name in node.input:
            if name:
                readers.setdefault(name, []).append(node)
    consumers: dict[str, list[str]] = {}
    for node in graph_def.node:
        for name in _data_inputs(node):
            consumers.setdefault(name, []).append(node.name)

    def tf_node_of(tensor: str) -> str | None:
        name = node_name(tensor)
        return name if name in tf_nodes else None

    def upstream(tensor: str, depth: int = 0) -> set[str]:
        """The TF nodes whose tensors `tensor` is made from, looking through nodes without a TF name."""
        made_by = tf_node_of(tensor)
        if made_by is not None:
            return {made_by}
        node = producer.get(tensor)
        if node is None:
            return set()
        made_for = origin.get(node.name)
        if made_for is not None and not helper(node):
            return {made_for}
        if depth >= _THROUGH or (made_for is None and not helper(node)):
            return set()
        return set().union(*(upstream(name, depth + 1) for name in node.input if name))

    def downstream(tensor: str, depth: int = 0) -> set[str]:
        """The TF nodes reading `tensor`, looking through the nodes without a TF name that move it."""
        found: set[str] = set()
        for reader in readers.get(tensor, []):
            tf = origin.get(reader.name)
            if helper(reader) and depth < _THROUGH:
                found.update(*(downstream(name, depth + 1) for name in reader.output if name))
            elif tf is not None:
                found.add(tf)
        return found

    computed: dict[str, tuple[str, ...]] = {}
    for node in graph.node:
        if origin.get(node.name) is not None or helper(node) or subgraphs(node):
            continue
        sources = set().union(*(upstream(name) for name in node.input if name))
        last = {tf for tf in (tf_node_of(name) for name in node.output if name) if tf is not None and tf not in owned}
        targets = set().union(*(downstream(name) for name in node.output if name)) - last
        between = _between(sources, targets, consumers, tf_nodes, owned) | last
        if between:
            computed[node.name] = tuple(_in_graph_order(between, graph_def))
    return computed


def _between(sources: set[str], targets: set[str], consumers: Mapping[str, list[str]],
             tf_nodes: Mapping[str, Any], owned: set[str]) -> set[str]:
    """The TF nodes without an ONNX node of their own on a path from one of `sources` to one of `targets`."""
    ahead = _reach(sources, lambda name: consumers.get(name, []), owned)
    behind = _reach(targets, lambda name: [*_data_inputs(tf_nodes[name])] if name in tf_nodes else [], owned)
    return (ahead & behind) - sources - targets


def _reach(start: set[str], step: Any, owned: set[str]) -> set[str]:
    """What is reached from `start` by `step`, through nodes not in `owned` (the start itself excluded)."""
    seen: set[str] = set()
    todo = [name for first in start for name in step(first)]
    while todo:
        name = todo.pop()
        if name in seen or name in owned:
            continue
        seen.add(name)
        todo.extend(step(name))
    return seen


def _computes(tf_type: str) -> bool:
    """Whether the ONNX ops a TF type becomes include one that is not a layout move (a Conv2D's Conv, not a
    Reshape's Reshape); unknown types are taken to compute."""
    listed = ONNX_OPS_OF_TF.get(tf_type)
    return listed is None or any(op not in _LAYOUT for op in listed)


def _data_inputs(node: Any) -> Iterable[str]:
    return (node_name(name) for name in node.input if not name.startswith("^"))


def _in_graph_order(names: set[str], graph_def: GraphDef) -> list[str]:
    """`names` in the pb's order, a producer before its readers as TF writes them."""
    order = {node.name: index for index, node in enumerate(graph_def.node)}
    return sorted(names, key=lambda name: order.get(name, len(order)))
