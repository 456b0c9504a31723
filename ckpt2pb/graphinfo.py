"""Facts about a GraphDef that inspect and freeze share: consumers, placeholders, shapes and dtypes."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from binio.graph_types import GraphDef
from binio.spec import node_name, tensor_name
from ckpt2pb.errors import SourceError

PLACEHOLDER_OPS = frozenset({"Placeholder", "PlaceholderV2", "PlaceholderWithDefault"})
ITERATOR_OUTPUT_OPS = frozenset({"IteratorGetNext", "IteratorGetNextSync", "IteratorGetNextAsOptional"})
# Ops that turn logits into probabilities: what a classifier answers, beside or instead of its logits.
PROBABILITY_OPS = frozenset({"Softmax", "Sigmoid", "LogSoftmax"})
# The tf.data side of a training graph: what is left when outputs still read the pipeline.
DATASET_OPS = ITERATOR_OUTPUT_OPS | frozenset({"IteratorV2", "Iterator", "OneShotIterator", "AnonymousIteratorV2",
                                               "AnonymousIteratorV3", "MakeIterator"})


def is_switch_tensor(dtype: str, shape: tuple[int | None, ...] | None) -> bool:
    """A bool that is a scalar or has no shape at all (None: rank unknown): a switch (is_training) to fix with
    --set, not data. The one rule, for placeholder nodes (`is_switch`) and inspected tensors alike."""
    return dtype == "bool" and (shape is None or shape == ())


def is_switch(node: Any) -> bool:
    """A placeholder node that is a switch (`is_switch_tensor`), read from its attributes."""
    from tensorflow import as_dtype

    shape = node.attr["shape"].shape if "shape" in node.attr else None
    dims = None if shape is None or shape.unknown_rank else tuple(d.size if d.size >= 0 else None for d in shape.dim)
    return is_switch_tensor(as_dtype(node.attr["dtype"].type).name, dims)


def topological_order(graph_def: GraphDef) -> list[Any]:
    """The nodes, each after its data inputs (cycles, from TF1 loops, broken where met)."""
    nodes = {node.name: node for node in graph_def.node}
    seen: set[str] = set()
    order: list[Any] = []
    for start in graph_def.node:
        stack = [(start.name, False)]
        while stack:
            name, expanded = stack.pop()
            if expanded:
                order.append(nodes[name])
                continue
            if name in seen or name not in nodes:
                continue
            seen.add(name)
            stack.append((name, True))
            stack.extend((node_name(ref), False) for ref in nodes[name].input if not ref.startswith("^"))
    return order


def feed_tensors_by_node(graph_def: GraphDef, order: list[Any], is_feed: Any) -> dict[str, frozenset[str]]:
    """Per node, the feed tensors it is computed from (data inputs only): each placeholder `is_feed` accepts
    (`name:0`), and each tf.data iterator output by its own index, so a model computed from
    `IteratorGetNext:0` is told apart from labels read from `IteratorGetNext:1`."""
    ops = {node.name: node.op for node in graph_def.node}
    feeds: dict[str, frozenset[str]] = {}
    for node in order:
        found: set[str] = {f"{node.name}:0"} if node.op in PLACEHOLDER_OPS and is_feed(node) else set()
        for ref in node.input:
            if ref.startswith("^"):
                continue
            source = node_name(ref)
            found |= {tensor_name(ref)} if ops.get(source) in ITERATOR_OUTPUT_OPS else feeds.get(source, frozenset())
        feeds[node.name] = frozenset(found)
    return feeds


def feed_tensors_read(graph_def: GraphDef, nodes: set[str]) -> set[str]:
    """The feed tensors that the `nodes` (a set closed over inputs, e.g. every ancestor of the outputs)
    take: their placeholders' outputs, and the iterator outputs one of them reads (not every output of the
    iterator: a model reads the images, its loss the labels)."""
    found: set[str] = set()
    ops = {node.name: node.op for node in graph_def.node}
    for node in graph_def.node:
        if node.name not in nodes:
            continue
        if node.op in PLACEHOLDER_OPS:
            found.add(f"{node.name}:0")
        found |= {tensor_name(ref) for ref in node.input
                  if not ref.startswith("^") and ops.get(node_name(ref)) in ITERATOR_OUTPUT_OPS}
    return found


def node_readers(graph_def: GraphDef) -> dict[str, list[str]]:
    """Per node, the nodes that take it as a data or control input, in graph order; a node nothing reads is
    absent (so the keys are every consumed node)."""
    readers: dict[str, list[str]] = {}
    for node in graph_def.node:
        for ref in node.input:
            readers.setdefault(node_name(ref), []).append(node.name)  # `^ctrl`, `op:1` -> node
    return readers


def import_graph(graph_def: GraphDef, origin: object = "the graph") -> Any:
    """A tf.Graph holding `graph_def` under its own names (shape inference done by the import); a graph this
    TensorFlow cannot import (a custom op not loaded, a corrupt node) is refused, naming `origin`."""
    import tensorflow as tf
    from tensorflow.python.framework import op_def_registry  # no public API lists the registered ops

    functions = {f.signature.name for f in graph_def.library.function}
    missing: dict[str, list[str]] = {}
    for node in graph_def.node:
        if node.op not in functions and op_def_registry.get(node.op) is None:
            missing.setdefault(node.op, []).append(node.name)
    unknown = [f"{op} ({names[0]}{f' and {len(names) - 1} more' if len(names) > 1 else ''})"
               for op, names in sorted(missing.items())]
    if unknown:
        raise SourceError(f"{origin}: op types TensorFlow {tf.__version__} does not have: {', '.join(unknown[:5])}"
                          + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""),
                          hint="a custom op: load its library (tf.load_op_library) in a TensorFlow that has it, "
                               "or replace the op before exporting")
    graph = tf.Graph()
    try:
        with graph.as_default():
            tf.compat.v1.import_graph_def(graph_def, name="")
    except (ValueError, tf.errors.OpError) as exc:
        message = getattr(exc, "message", str(exc)) or type(exc).__name__
        raise SourceError(f"{origin}: TensorFlow {tf.__version__} cannot import the graph",
                          hint=message.strip().splitlines()[0]) from None
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
