"""tf2onnx's optimizers walking each graph's nodes in one order in every run.

tf2onnx builds an If's branches and a Loop's body from sets of node objects (``utils.construct_graph_from_nodes``),
an order that follows their addresses, and its optimizers then walk the nodes in the order the graph holds them:
which of three Identity nodes in a cond's branch the identity optimizer kept changed from one conversion of a pb to
the next (the ResNet of tests/models.py: three names in three conversions). While open, each optimizer pass starts
on a graph (the main one, or a branch or body) whose nodes tf2onnx's own topological sort has put in order, which
starts from the nodes sorted by name.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

_patching = threading.Lock()


def _in_order(graph: Any) -> Any:
    try:
        graph.topological_sort(graph.get_nodes())
    except ValueError:  # a graph tf2onnx's sort refuses (a cycle mid-rewrite): sorted by name, as the sort starts
        graph.reset_nodes(sorted(graph.get_nodes(), key=lambda node: node.name))
    return graph


@contextmanager
def optimizer_passes_in_order() -> Iterator[None]:
    from tf2onnx.optimizer.optimizer_base import GraphOptimizerBase

    original = GraphOptimizerBase._apply_optimization

    def apply(graph: Any, optimize_func: Callable[[Any], Any]) -> Any:
        return original(graph, lambda each: optimize_func(_in_order(each)))

    with _patching:
        GraphOptimizerBase._apply_optimization = staticmethod(apply)
        try:
            yield
        finally:
            GraphOptimizerBase._apply_optimization = staticmethod(original)
