"""The names tf2onnx makes, renumbered so that one pb converts to the same ONNX bytes in any process.

tf2onnx names what it adds ``<name>__<n>`` (a helper of a TF node, a folded constant: ``BiasAdd__6``,
``const_fold_opt__9``), `n` drawn from one counter of its process (``tf2onnx.utils.INTERNAL_NAME``) that is never
reset and that some of its modules also draw from when first imported. A second conversion in one process
(tune-precision's candidates, a pipeline) therefore wrote other names, hence other bytes, than the first. After a
conversion, the numbers it drew are replaced by their rank among those the model holds (1, 2, ...): the same
conversion gives the same names whatever the counter stood at. Names of the TF graph are never changed, nor
the TF name a generated one starts with (``a__3/conv__6``: only ``__6``), so each name keeps its TF origin.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Set
from typing import Any

from binio.spec import node_name

_NUMBER = re.compile(r"__(\d+)(?!\d)")


def counter() -> int:
    """Where tf2onnx's name counter stands now."""
    from tf2onnx import utils

    return int(utils.INTERNAL_NAME)


def _graphs(graph: Any) -> Iterator[Any]:
    """`graph` and every subgraph of its nodes (an If's branches, a Loop's body), depth first."""
    yield graph
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.HasField("g"):
                yield from _graphs(attribute.g)
            for sub in attribute.graphs:
                yield from _graphs(sub)


def _visit_names(model: Any, visit: Callable[[str], str]) -> None:
    """Calls `visit` on every name in `model`'s graphs and stores what it returns in the name's place."""
    for graph in _graphs(model.graph):
        for node in graph.node:
            node.name = visit(node.name)
            for refs in (node.input, node.output):
                for position, ref in enumerate(refs):
                    refs[position] = visit(ref)
        for values in (graph.input, graph.output, graph.value_info, graph.initializer):
            for value in values:
                value.name = visit(value.name)


def renumber_generated_names(model: Any, tf_nodes: Set[str], drawn: range) -> dict[str, str]:
    """Renames, in `model`, each name holding numbers tf2onnx drew during its conversion (`drawn`: the counter's
    values then) to hold their rank instead; names of `tf_nodes` stay. Returns old name -> new name. Leaves the
    model as it is (and returns {}) where a new name would take one already there."""
    names: set[str] = set()

    def collect(name: str) -> str:
        names.add(name)
        return name

    _visit_names(model, collect)

    def generated(name: str) -> bool:
        return bool(name) and node_name(name) not in tf_nodes

    def split(name: str) -> tuple[str, str]:
        """(the longest TF node name `name` starts with, followed by ``__``, or ""; the rest): only the rest was
        numbered by tf2onnx (a TF scope may itself hold ``__3``)."""
        head = name
        while True:
            head, sep, _ = head.rpartition("__")
            if not sep or not head:
                return "", name
            if head in tf_nodes:
                return head, name[len(head):]

    numbers = sorted({int(m.group(1)) for name in names if generated(name) for m in _NUMBER.finditer(split(name)[1])
                      if int(m.group(1)) in drawn})
    rank = {number: index for index, number in enumerate(numbers, 1)}

    def renamed(name: str) -> str:
        if not generated(name):
            return name
        head, tail = split(name)
        return head + _NUMBER.sub(lambda m: f"__{rank.get(int(m.group(1)), int(m.group(1)))}", tail)

    changed = {name: renamed(name) for name in names if renamed(name) != name}
    new_names = set(changed.values())
    taken = (names - changed.keys()) | set(tf_nodes)  # a new name may not look like a TF node pruned from the model
    if len(new_names) < len(changed) or new_names & taken or {node_name(n) for n in new_names} & set(tf_nodes):
        return {}
    _visit_names(model, lambda name: changed.get(name, name))
    return changed
