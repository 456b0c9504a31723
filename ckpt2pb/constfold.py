"""Constant values of tensors in a GraphDef, computed by TensorFlow itself: any chain of stateless ops whose
sources are all constants (a `--set` switch squeezed, cast, compared, negated...) is evaluated as a whole, so
folding a `tf.cond` never depends on recognising the ops between the switch and its predicate."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from binio.graph_types import GraphDef
from binio.spec import node_name
from ckpt2pb.graphinfo import PLACEHOLDER_OPS
from ckpt2pb.host_ops import family_of


def _foldable_ops(graph_def: GraphDef) -> dict[str, bool]:
    """Per node: whether its value can be computed now (no feed, no state, no randomness, nothing that acts on the
    host: a ReadFile of a constant path is constant to TensorFlow, not to infer)."""
    from tensorflow.python.framework import op_def_registry  # no public API reaches op definitions

    foldable = {}
    for node in graph_def.node:
        op_def = op_def_registry.get(node.op)
        family = family_of(node)
        foldable[node.name] = op_def is not None and not op_def.is_stateful and node.op not in PLACEHOLDER_OPS \
            and not (family is not None and family.acts)
    return foldable


def constant_values(graph_def: GraphDef, tensors: Iterable[str]) -> dict[str, Any]:
    """The values (numpy arrays) of those `tensors` that depend on constants only, by tensor name."""
    import tensorflow as tf

    foldable = _foldable_ops(graph_def)
    inputs = {node.name: [node_name(ref) for ref in node.input] for node in graph_def.node}
    memo: dict[str, bool] = {}

    def constant(name: str) -> bool:
        stack, visiting = [(name, False)], set()
        while stack:  # post-order without recursion: graphs can be deeper than Python's recursion limit
            item, expanded = stack.pop()
            if item in memo:
                continue
            if expanded:  # an input still being visited is a cycle (a TF1 loop): not constant
                memo[item] = foldable.get(item, False) and all(memo.get(i, False) for i in inputs.get(item, ()))
                continue
            if item in visiting:
                continue
            visiting.add(item)
            stack.append((item, True))
            stack.extend((i, False) for i in inputs.get(item, ()) if i not in memo)
        return memo[name]

    wanted = sorted({t for t in tensors if node_name(t) in inputs and constant(node_name(t))})
    if not wanted:
        return {}
    sub = tf.compat.v1.graph_util.extract_sub_graph(graph_def, sorted({node_name(t) for t in wanted}))
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.import_graph_def(sub, name="")
    with tf.compat.v1.Session(graph=graph) as session:
        values = session.run([graph.get_tensor_by_name(t if ":" in t else f"{t}:0") for t in wanted])
    return dict(zip(wanted, values, strict=True))
