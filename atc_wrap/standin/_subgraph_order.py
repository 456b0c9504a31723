"""tf2onnx walking a graph's nodes in one order in every run: its optimizers, and what reads an output's consumers.

tf2onnx builds an If's branches and a Loop's body from sets of node objects (``utils.construct_graph_from_nodes``),
an order that follows their addresses, and its optimizers then walk the nodes in the order the graph holds them:
which of three Identity nodes in a cond's branch the identity optimizer kept changed from one conversion of a pb to
the next (the ResNet of tests/models.py: three names in three conversions). While open, each optimizer pass starts
on a graph (the main one, or a branch or body) whose nodes tf2onnx's own topological sort has put in order, which
starts from the nodes sorted by name.

tf2onnx also keeps each output's consumers as a set of node names (``Graph._output_to_consumers``), and its TF 1.x
loop rewriter takes a Loop's carried state in the order ``find_output_consumers`` gives the LoopCond's Switch nodes:
a set's order, which changed from one conversion to the next in one process (a dynamic_rnn's Loop took its inputs
in another order, and two loops their generated names). While open, the consumers come sorted by name.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

_patching = threading.Lock()
_patching_consumers = threading.Lock()


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


@contextmanager
def consumers_in_order() -> Iterator[None]:
    from tf2onnx.graph import Graph

    original = Graph.find_output_consumers

    def find_output_consumers(self: Any, output_name: str) -> list[Any]:
        return sorted(original(self, output_name), key=lambda node: node.name)

    with _patching_consumers:
        Graph.find_output_consumers = find_output_consumers
        try:
            yield
        finally:
            Graph.find_output_consumers = original
