"""TF2 control flow (`While`/`StatelessWhile` over TensorList ops, what `tf.compat.v1.nn.dynamic_rnn` writes under
control flow v2) kept functional for tf2onnx.

tf2onnx runs Grappler on the graph before converting it, and Grappler lowers every While marked
`_lower_using_switch_merge` (TF marks them all when it builds them) to TF1's Switch/Merge/Enter/Exit, leaving the
TensorList ops of its body in place. tf2onnx's TF1 loop rewriter then carries the TensorList (a DT_VARIANT) through
the ONNX Loop as a tensor of no type: tf2onnx 1.17 writes a model ONNX Runtime refuses to load ("Invalid tensor
data type 0"), or fails on `TensorListReserve`. Unmarked, the While reaches tf2onnx's own While handler, which
turns the TensorList ops into ONNX sequences of the loop's scan outputs. The mark only tells TensorFlow's runtime
how to execute the loop (inline or as a function), never what it computes.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from binio.graph_types import GraphDef

WHILE_OPS = frozenset({"While", "StatelessWhile"})
LOWERING_ATTR = "_lower_using_switch_merge"


def _while_nodes(graph_def: GraphDef) -> list[Any]:
    """The While nodes of the graph and of its library's function bodies (a loop nested in a loop's body)."""
    bodies = [graph_def.node, *(function.node_def for function in graph_def.library.function)]
    return [node for nodes in bodies for node in nodes if node.op in WHILE_OPS]


@contextmanager
def loops_kept_functional(graph_def: GraphDef) -> Iterator[int]:
    """Within the block, no While of `graph_def` is marked for lowering (yields how many were unmarked); the marks
    are put back as they were after it, so the caller's graph is unchanged (no copy of its weights is made)."""
    marks: list[tuple[Any, Any]] = []
    for node in _while_nodes(graph_def):
        if LOWERING_ATTR in node.attr and node.attr[LOWERING_ATTR].b:
            marks.append((node, node.attr[LOWERING_ATTR].b))
            node.attr[LOWERING_ATTR].b = False
    try:
        yield len(marks)
    finally:
        for node, value in marks:
            node.attr[LOWERING_ATTR].b = value


def nested_loops(graph_def: GraphDef) -> list[str]:
    """The loops nested in another loop's body, which tf2onnx 1.17 converts under neither control flow (it fails
    with "Graph has cycles"): a TF2 While whose body calls a While (by name of the outer one), and a TF1 loop
    whose frame lies in another's (TF names a loop's frame in the scope it was built in)."""
    functions = {f.signature.name: f for f in graph_def.library.function}

    def loops_in(name: str, seen: frozenset[str]) -> bool:
        function = functions.get(name)
        if function is None or name in seen:
            return False
        return any(node.op in WHILE_OPS or any(loops_in(value.func.name, seen | {name})
                                               for value in node.attr.values() if value.HasField("func"))
                   for node in function.node_def)

    found = sorted(node.name for node in graph_def.node
                   if node.op in WHILE_OPS and loops_in(node.attr["body"].func.name, frozenset()))
    frames = {node.attr["frame_name"].s.decode("utf-8", "replace").rpartition("/")[0]: node.name
              for node in graph_def.node if node.op in ("Enter", "RefEnter")}
    found += sorted(name for frame, name in frames.items()
                    if any(frame.startswith(other + "/") for other in frames if other and other != frame))
    return found
