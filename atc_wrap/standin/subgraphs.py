"""An ONNX graph's subgraphs (an If's branches, a Loop's or Scan's body) and the outer names they read.

A subgraph reads the tensors of the graphs around it by name, without listing them as inputs of the node that
holds it: the If that tf2onnx makes of a ``tf.cond`` lists only the condition, while its branches read the
activations the cond switches on. Whatever rewrites a graph after tf2onnx must count those reads: a topological
sort must put the If after the node making ``relu:0`` (a branch reads it), a rename of ``x`` must reach the bodies
that read ``x`` (and not those that define an ``x`` of their own), and a weight read only inside a body is read
there, not unread. Everything here looks through any depth of nesting (an If in a Loop's body).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any


def subgraphs(node: Any) -> list[Any]:
    """The graphs `node` holds in its attributes (an If's two branches, a Loop's body), in attribute order."""
    found: list[Any] = []
    for attribute in node.attribute:
        if attribute.HasField("g"):
            found.append(attribute.g)
        found.extend(attribute.graphs)
    return found


def all_graphs(graph: Any) -> Iterator[Any]:
    """`graph` and every subgraph of its nodes, depth first."""
    yield graph
    for node in graph.node:
        for sub in subgraphs(node):
            yield from all_graphs(sub)


def defined_in(graph: Any) -> set[str]:
    """The names `graph` itself defines: its inputs, its initializers and its nodes' outputs."""
    names = {value.name for value in graph.input}
    names.update(tensor.name for tensor in graph.initializer)
    names.update(tensor.values.name for tensor in graph.sparse_initializer)
    names.update(output for node in graph.node for output in node.output if output)
    return names


def outer_reads(node: Any) -> list[str]:
    """The names `node`'s subgraphs read from the graphs around them (defined by none of them), in the order they
    are first read; empty for a node without subgraphs."""
    found: dict[str, None] = {}
    for sub in subgraphs(node):
        local = defined_in(sub)
        for inner in sub.node:
            for name in (*inner.input, *outer_reads(inner)):
                if name and name not in local:
                    found.setdefault(name)
        for output in sub.output:  # a body may give an outer tensor straight back
            if output.name not in local:
                found.setdefault(output.name)
    return list(found)


def all_reads(node: Any) -> list[str]:
    """What `node` reads: its inputs, then what its subgraphs read from outside them."""
    explicit = [name for name in node.input if name]
    return explicit + [name for name in outer_reads(node) if name not in explicit]


def rename_outer_reads(node: Any, renamed: Mapping[str, str]) -> None:
    """In `node`'s subgraphs, every read of an outer name in `renamed` reads its new name instead; a subgraph that
    defines a name of its own keeps reading its own."""
    for sub in subgraphs(node):
        wanted = {old: new for old, new in renamed.items() if old not in defined_in(sub)}
        if not wanted:
            continue
        for inner in sub.node:
            for position, name in enumerate(inner.input):
                if name in wanted:
                    inner.input[position] = wanted[name]
            rename_outer_reads(inner, wanted)
        for output in sub.output:
            if output.name in wanted:
                output.name = wanted[output.name]
