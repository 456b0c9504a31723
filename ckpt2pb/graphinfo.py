"""Facts about a GraphDef that inspect and freeze share: consumers, placeholders, shapes and dtypes."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from binio.spec import node_name

PLACEHOLDER_OPS = frozenset({"Placeholder", "PlaceholderV2", "PlaceholderWithDefault"})
ITERATOR_OUTPUT_OPS = frozenset({"IteratorGetNext", "IteratorGetNextSync", "IteratorGetNextAsOptional"})
# The tf.data side of a training graph: what is left when outputs still read the pipeline.
DATASET_OPS = ITERATOR_OUTPUT_OPS | frozenset({"IteratorV2", "Iterator", "OneShotIterator", "AnonymousIteratorV2",
                                               "AnonymousIteratorV3", "MakeIterator"})


def consumed_nodes(graph_def: Any) -> set[str]:
    """Every node some other node takes as a data or control input."""
    return {node_name(ref) for node in graph_def.node for ref in node.input}  # `^ctrl`, `op:1` -> node


def import_graph(graph_def: Any) -> Any:
    """A tf.Graph holding `graph_def` under its own names (shape inference done by the import)."""
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.import_graph_def(graph_def, name="")
    return graph


def shape_of(tensor: Any) -> tuple[int | None, ...] | None:
    """The static shape, or None when even the rank is unknown."""
    if tensor.shape.rank is None:
        return None
    return tuple(tensor.shape.as_list())


def tensor_names(graph: Any) -> Iterable[str]:
    for op in graph.get_operations():
        yield op.name
        for tensor in op.outputs:
            yield tensor.name
