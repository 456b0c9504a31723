"""The names tf2onnx makes, renumbered so that one pb converts to the same ONNX bytes in any process.

tf2onnx names what it adds ``<name>__<n>`` (a helper of a TF node, a folded constant: ``BiasAdd__6``,
``const_fold_opt__9``), `n` drawn from one counter of its process (``tf2onnx.utils.INTERNAL_NAME``) that is never
reset and that some of its modules also draw from when first imported. A second conversion in one process
(tune-precision's candidates, a pipeline) therefore wrote other names, hence other bytes, than the first. After a
conversion, the numbers it drew are replaced by their rank (1, 2, ...) in a walk of the model that they do not
steer (`_ranks_in_walk_order`): the same conversion gives the same names whatever the counter stood at, and whatever
order tf2onnx drew them in (it follows object addresses: which of two constants it folds first). Names of the TF
graph are never changed, nor the TF name a generated one starts with (``a__3/conv__6``: only ``__6``), so each name
keeps its TF origin.

Two more things differ between processes, both in orders Python's hash seed decides: the order of the nodes
(tf2onnx sorts them topologically, ties broken by set order), and which of two equal constants tf2onnx's merge
keeps (two zero biases folded from batch norms: ``block2/expand/Conv2D_bias_fused_bn`` in one process,
``block2/shortcut/Conv2D_bias_fused_bn`` in the next). `canonical_order` sorts the nodes topologically with ties
broken by name, and `name_shared_initializers` names such a constant after its reader that sorts first.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Set
from typing import Any

from atc_wrap.standin.subgraphs import all_graphs, all_reads, outer_reads, subgraphs
from binio.spec import node_name

GENERATED_NUMBER = re.compile(r"__(\d+)(?!\d)")  # a number tf2onnx drew, in a name it made


def counter() -> int:
    """Where tf2onnx's name counter stands now."""
    from tf2onnx import utils

    return int(utils.INTERNAL_NAME)


# Where each conversion starts tf2onnx's counter: every conversion draws the same numbers, and they all have as many
# digits (up to 999,999 draws), so tf2onnx's own sorts by name (its topological sort starts from nodes sorted by
# name) order ``Transpose__1000009`` before ``Transpose__1000012`` as they would the numbers. Started where the
# previous conversion left it, ``__9`` sorted after ``__12``: the same pb took other paths through tf2onnx's
# optimizers (which of two Identity nodes in an If's branch survives) in a second conversion in one process.
COUNTER_START = 1_000_000


def restart_counter() -> None:
    """Sets tf2onnx's name counter to `COUNTER_START` (call under the lock that serialises conversions)."""
    from tf2onnx import utils

    utils.INTERNAL_NAME = COUNTER_START


def _visit_names(model: Any, visit: Callable[[str], str]) -> None:
    """Calls `visit` on every name in `model`'s graphs and stores what it returns in the name's place."""
    for graph in all_graphs(model.graph):
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

    def numbers_in(name: str) -> list[int]:
        if not generated(name):
            return []
        return [int(m.group(1)) for m in GENERATED_NUMBER.finditer(split(name)[1]) if int(m.group(1)) in drawn]

    rank = _ranks_in_walk_order(model, numbers_in)

    def renamed(name: str) -> str:
        if not generated(name):
            return name
        head, tail = split(name)
        return head + GENERATED_NUMBER.sub(lambda m: f"__{rank.get(int(m.group(1)), int(m.group(1)))}", tail)

    changed = {name: renamed(name) for name in names if renamed(name) != name}
    new_names = set(changed.values())
    taken = (names - changed.keys()) | set(tf_nodes)  # a new name may not look like a TF node pruned from the model
    if len(new_names) < len(changed) or new_names & taken or {node_name(n) for n in new_names} & set(tf_nodes):
        return {}
    _visit_names(model, lambda name: changed.get(name, name))
    return changed


def _ranks_in_walk_order(model: Any, numbers_in: Callable[[str], list[int]]) -> dict[int, int]:
    """Each number tf2onnx drew -> its rank in a walk of the model that its numbers do not steer: the nodes in
    topological order, ties broken by name, type and inputs spelled with the ranks given so far (a number not
    ranked yet spelled ``#``), each node's inputs, name, outputs and subgraphs in turn. tf2onnx draws its numbers in
    an order that follows object addresses (which of two constants it folds first, which transpose it makes
    first), so the order of the numbers themselves differs between runs; the walk does not."""
    rank: dict[int, int] = {}

    def see(name: str) -> None:
        for number in numbers_in(name):
            rank.setdefault(number, len(rank) + 1)

    def spelled(name: str) -> str:
        numbers = set(numbers_in(name))
        if not numbers:
            return name
        return GENERATED_NUMBER.sub(lambda m: f"__{rank.get(int(m.group(1)), '#')}" if int(m.group(1)) in numbers
                           else m.group(0), name)

    def walk(graph: Any) -> None:
        import heapq

        for value in graph.input:
            see(value.name)
        nodes = list(graph.node)
        readers, missing = _dependencies(nodes)

        def key(index: int) -> tuple[str, str, tuple[str, ...], int]:
            node = nodes[index]
            return spelled(node.name), node.op_type, tuple(spelled(name) for name in node.input), index

        ready = [key(index) for index in range(len(nodes)) if not missing[index]]
        heapq.heapify(ready)
        done = [False] * len(nodes)
        while ready:
            index = heapq.heappop(ready)[-1]
            done[index] = True
            node = nodes[index]
            for name in (*node.input, node.name, *node.output):
                see(name)
            for sub in subgraphs(node):
                walk(sub)
            for reader in readers.get(index, ()):
                missing[reader] -= 1
                if not missing[reader]:
                    heapq.heappush(ready, key(reader))
        for index, node in enumerate(nodes):  # not a DAG as written: the rest as it stands
            if not done[index]:
                for name in (*node.input, node.name, *node.output):
                    see(name)
                for sub in subgraphs(node):
                    walk(sub)
        for value in (*graph.output, *sorted(graph.initializer, key=lambda t: spelled(t.name))):
            see(value.name)

    walk(model.graph)
    return rank


def _dependencies(nodes: list[Any]) -> tuple[dict[int, list[int]], list[int]]:
    """For a topological walk of one graph's `nodes`: each node's readers (by index), and how many nodes each waits
    for. An If or Loop waits for what its bodies read from this graph too, though it does not list it as input."""
    producer = {output: index for index, node in enumerate(nodes) for output in node.output if output}
    waits_for = [{producer[name] for name in all_reads(node) if name in producer and producer[name] != index}
                 for index, node in enumerate(nodes)]
    readers: dict[int, list[int]] = {}
    for index, needed in enumerate(waits_for):
        for other in needed:
            readers.setdefault(other, []).append(index)
    return readers, [len(needed) for needed in waits_for]


def canonical_order(model: Any) -> None:
    """Puts the nodes of every graph of `model` in one topological order, ties broken by node name, and the
    initializers in name order: the same graph, the same order, whatever order tf2onnx left them in. Each subgraph
    is named after the node and attribute holding it (`_name_subgraphs`)."""
    import heapq

    _name_subgraphs(model.graph)
    for graph in all_graphs(model.graph):
        nodes = list(graph.node)
        readers, missing = _dependencies(nodes)
        ready = [(node.name, index) for index, node in enumerate(nodes) if not missing[index]]
        heapq.heapify(ready)
        order: list[int] = []
        while ready:
            _, index = heapq.heappop(ready)
            order.append(index)
            for reader in readers.get(index, ()):
                missing[reader] -= 1
                if not missing[reader]:
                    heapq.heappush(ready, (nodes[reader].name, reader))
        if len(order) != len(nodes):
            continue  # not a DAG as written (ONNX would refuse it anyway): left as it is, for the checker to name
        # Sorted in place, by each node's rank (outputs are unique in a graph, SSA): no node or weight is copied.
        rank = {_identity(nodes[index]): position for position, index in enumerate(order)}
        graph.node.sort(key=lambda node: rank[_identity(node)])
        graph.initializer.sort(key=lambda tensor: tensor.name)


def _name_subgraphs(graph: Any) -> None:
    """Names each If branch and Loop or Scan body ``<node>_<attribute>``, its doc string ``graph for <node>
    <attribute>``, as tf2onnx spells them, from the node's final name: tf2onnx names a body with a number it draws
    (``tf2onnx__1000020``) and its doc string with the node's name before the renumbering, and the two loops of a
    bidirectional RNN are rewritten in an order Python's hash seed decides, so the same pb gave those names swapped
    in another process. Names of subgraphs are not referred to by anything in the model."""
    for node in graph.node:
        for attribute in node.attribute:
            for sub in ([attribute.g] if attribute.HasField("g") else []) + list(attribute.graphs):
                sub.name = f"{node.name}_{attribute.name}"
                sub.doc_string = f"graph for {node.name} {attribute.name}"
                _name_subgraphs(sub)


def _identity(node: Any) -> tuple[str, tuple[str, ...]]:
    return node.name, tuple(node.output)


def name_shared_initializers(model: Any, tf_nodes: Set[str]) -> dict[str, str]:
    """Renames each initializer of the main graph that tf2onnx made (not a name of `tf_nodes`) and that several
    nodes read, to ``<the reader whose name sorts first>/shared_<its input index>``: what the merge of equal
    constants kept is then the same name in every process. Returns old name -> new name; leaves the model as it
    is (and returns {}) where a new name would take one already there."""
    graph = model.graph
    readers: dict[str, list[tuple[str, int]]] = {}
    for node in graph.node:
        # An If reads what its branches read too: counted past its inputs.
        for index, name in enumerate((*node.input, *outer_reads(node))):
            readers.setdefault(name, []).append((node.name, index))
    changed = {}
    for initializer in graph.initializer:
        name = initializer.name
        read_by = sorted(readers.get(name, []))
        if len({reader for reader, _ in read_by}) > 1 and node_name(name) not in tf_nodes:
            first, index = read_by[0]
            changed[name] = f"{first}/shared_{index}"
    names: set[str] = set()

    def collect(name: str) -> str:
        names.add(name)
        return name

    _visit_names(model, collect)
    new_names = set(changed.values())
    if len(new_names) < len(changed) or new_names & (names - changed.keys()) or new_names & set(tf_nodes):
        return {}
    _visit_names(model, lambda name: changed.get(name, name))
    return changed
