"""Edits on a GraphDef: a tensor becomes a placeholder, a placeholder becomes a constant or its default, and
what an older consumer (TF 1.15, ATC's TF parser) would stumble on is removed."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from binio.graph_types import GraphDef
from binio.spec import node_name, output_index

# Ops that only check or log: their first input passes through unchanged (tf.compat.v1.Print returns it), or
# they have no output at all (Assert, tf.print's PrintV2) and only control edges reach them.
_PASS_THROUGH_OPS = frozenset({"CheckNumerics", "CheckNumericsV2", "DebugIdentityV2", "StopGradient",
                               "PreventGradient", "Print"})
_DROPPED_OPS = frozenset({"Assert", "PrintV2"})


def _reference(tensor: str) -> str:
    """How a NodeDef input names a tensor: ``op`` for output 0, ``op:k`` otherwise."""
    node, index = node_name(tensor), output_index(tensor)
    return node if index == 0 else f"{node}:{index}"


def rewire(graph_def: GraphDef, tensor: str, replacement_node: str) -> int:
    """Every data input that reads `tensor` reads `replacement_node:0` instead; returns how many changed."""
    node, index = node_name(tensor), output_index(tensor)
    spellings = {f"{node}:{index}"} | ({node} if index == 0 else set())
    changed = 0
    for item in graph_def.node:
        for position, ref in enumerate(item.input):
            if ref in spellings:
                item.input[position] = replacement_node
                changed += 1
    return changed


def reachable(graph_def: GraphDef, targets: Sequence[str], *, colocation: bool = False, data_only: bool = False
              ) -> set[str]:
    """The names of every node the target nodes reach through data and control inputs, themselves included; with
    `colocation`, through the nodes each is placed with (``_class: loc:@NODE``) too, as TF's extract_sub_graph
    follows them; with `data_only`, through data inputs alone (what a value is computed from)."""
    inputs = {node.name: [node_name(ref) for ref in node.input if not (data_only and ref.startswith("^"))]
              for node in graph_def.node}
    if colocation:
        for node in graph_def.node:
            if "_class" in node.attr:
                inputs[node.name] += [value.decode("utf-8", "replace").removeprefix("loc:@")
                                      for value in node.attr["_class"].list.s]
    seen: set[str] = set()
    stack = list(targets)
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        stack.extend(inputs.get(name, ()))
    return seen


def keep_nodes(graph_def: GraphDef, kept: Collection[str]) -> int:
    """Removes, in place, every node not named in `kept`; the rest keep their order. Returns how many went.

    Nothing is copied: the nodes are sorted, kept first (protobuf moves a repeated field's elements, it does not
    copy them), and the rest cut off the end. Rebuilding the list instead (TF's extract_sub_graph, or `del` and
    `extend`) copies every node kept, and a frozen graph's nodes hold its weights. Node names are unique in a
    GraphDef (TensorFlow refuses one where they are not)."""
    count = sum(node.name in kept for node in graph_def.node)
    removed = len(graph_def.node) - count
    if removed:
        position = {node.name: index for index, node in enumerate(graph_def.node)}
        graph_def.node.sort(key=lambda node: (node.name not in kept, position[node.name]))
        del graph_def.node[count:]
    return removed


def prune_to(graph_def: GraphDef, targets: Sequence[str]) -> int:
    """Keeps, in place, only the nodes the target nodes reach, colocation included: the nodes TF's
    extract_sub_graph keeps, in their order, without its copy of each. Returns how many went."""
    missing = sorted(set(targets) - {node.name for node in graph_def.node})
    if missing:
        raise ValueError(f"no node {', '.join(missing)} in the graph to prune to")
    return keep_nodes(graph_def, reachable(graph_def, targets, colocation=True))


def add_placeholder(graph_def: GraphDef, name: str, dtype_enum: int, shape: tuple[int, ...]) -> None:
    node = graph_def.node.add()
    node.name = name
    node.op = "Placeholder"
    node.attr["dtype"].type = dtype_enum
    for size in shape:
        node.attr["shape"].shape.dim.add().size = size


def make_placeholder(node: Any, dtype_enum: int, shape: tuple[int, ...]) -> None:
    """Turns `node` (a Placeholder or PlaceholderWithDefault) into a Placeholder of exactly this shape."""
    node.op = "Placeholder"
    del node.input[:]
    for key in list(node.attr):
        del node.attr[key]
    node.attr["dtype"].type = dtype_enum
    node.attr["shape"].shape.unknown_rank = False
    for size in shape:
        node.attr["shape"].shape.dim.add().size = size


def make_constant(node: Any, value: Any) -> None:
    """Turns a placeholder node into a Const holding `value` (a numpy array of the node's dtype)."""
    import tensorflow as tf

    dtype_enum = node.attr["dtype"].type
    node.op = "Const"
    del node.input[:]
    for key in list(node.attr):
        del node.attr[key]
    node.attr["dtype"].type = dtype_enum
    node.attr["value"].tensor.CopyFrom(tf.make_tensor_proto(value))


def make_identity(node: Any, dtype_enum: int, inputs: list[str] | None = None) -> None:
    """Turns `node` into an Identity of dtype `dtype_enum`, reading `inputs` (default: the ones it has)."""
    node.op = "Identity"
    if inputs is not None:
        del node.input[:]
        node.input.extend(inputs)
    for key in list(node.attr):
        del node.attr[key]
    node.attr["T"].type = dtype_enum


def make_identity_n(node: Any, dtype_enums: list[int], inputs: list[str]) -> None:
    """Turns `node` into an Identity (one data input) or IdentityN (several) of `inputs`, keeping its name and
    output indices: what an inlined call leaves where the user named its outputs."""
    data = [ref for ref in inputs if not ref.startswith("^")]
    if len(data) == 1:
        make_identity(node, dtype_enums[0], inputs)
        return
    node.op = "IdentityN"
    del node.input[:]
    node.input.extend(inputs)
    for key in list(node.attr):
        del node.attr[key]
    node.attr["T"].list.type.extend(dtype_enums)


def fold_to_default(node: Any) -> None:
    """A PlaceholderWithDefault becomes an Identity of its default input: the value it had when nothing was fed."""
    make_identity(node, node.attr["dtype"].type)


def rename_node(graph_def: GraphDef, old: str, new: str) -> None:
    for item in graph_def.node:
        if item.name == old:
            item.name = new
        for position, ref in enumerate(item.input):
            bare = ref.lstrip("^")
            if node_name(bare) == old:
                prefix = "^" if ref.startswith("^") else ""
                item.input[position] = prefix + new + bare[len(old):]


def strip_checks(graph_def: GraphDef) -> int:
    """Drops Assert/PrintV2 nodes and TF2's AssertGuard conds (and the control inputs on them); CheckNumerics,
    StopGradient and v1 Print become an Identity of their first input."""
    dropped = {node.name for node in graph_def.node if node.op in _DROPPED_OPS or _is_assert_guard(node)}
    grew = True
    while grew:  # what reads only dropped nodes (the guard's Identity) is the assertion's plumbing too
        more = {node.name for node in graph_def.node if node.name not in dropped and data_inputs(node)
                and all(node_name(ref) in dropped for ref in data_inputs(node))}
        dropped |= more
        grew = bool(more)
    kept = [node for node in graph_def.node if node.name not in dropped]
    for node in kept:
        if node.op in _PASS_THROUGH_OPS:  # Print's further inputs are only what it logs
            make_identity(node, node.attr["T"].type, [node.input[0], *(r for r in node.input if r.startswith("^"))])
        inputs = [ref for ref in node.input if not (ref.startswith("^") and ref[1:] in dropped)]
        if len(inputs) != len(node.input):
            del node.input[:]
            node.input.extend(inputs)
    keep_nodes(graph_def, {node.name for node in kept})
    return len(dropped)


def data_inputs(node: Any) -> list[str]:
    """The node's data inputs, its ``^control`` inputs left out."""
    return [ref for ref in node.input if not ref.startswith("^")]


def _is_assert_guard(node: Any) -> bool:
    """TF2's graph-mode tf.debugging.assert_*: an `If` named AssertGuard whose branches hold the Assert."""
    return node.op in ("If", "StatelessIf") and node.name.rsplit("/", 1)[-1] == "AssertGuard"


def clear_devices(graph_def: GraphDef) -> None:
    for node in graph_def.node:
        node.device = ""


def strip_stale_colocation(graph_def: GraphDef) -> None:
    """Removes `_class: loc:@x` constraints naming nodes that pruning removed (the import would fail on them)."""
    names = {node.name for node in graph_def.node}
    for node in graph_def.node:
        if "_class" in node.attr:
            kept = [v for v in node.attr["_class"].list.s if v.decode().removeprefix("loc:@") in names]
            if kept:
                del node.attr["_class"].list.s[:]
                node.attr["_class"].list.s.extend(kept)
            else:
                del node.attr["_class"]


def strip_default_attrs(graph_def: GraphDef) -> int:
    """Removes attributes equal to their op's registered default, as TF's `strip_default_attrs` does, in the
    graph and in its library's function bodies: a newer TF adds attributes (`exponential_avg_factor` on
    FusedBatchNormV3) that older parsers reject but never need."""
    from tensorflow.python.framework import op_def_registry  # no public API reaches op definitions

    removed = 0
    bodies = [graph_def.node, *(function.node_def for function in graph_def.library.function)]
    for nodes in bodies:
        for node in nodes:
            op_def = op_def_registry.get(node.op)
            if op_def is None:
                continue
            for attr_def in op_def.attr:
                if attr_def.HasField("default_value") and attr_def.name in node.attr \
                        and node.attr[attr_def.name] == attr_def.default_value:
                    del node.attr[attr_def.name]
                    removed += 1
    return removed
