"""Folding `tf.cond` whose predicate became a constant (a folded `is_training`): only the live branch stays.

TF2's graph mode writes tf.cond as a functional `If` op whose branches live in the function library; once the
predicate is a constant, the taken branch is inlined in the If's place and the If goes, so the pb holds plain ops
that older consumers read and that carry static shapes again.
"""

from __future__ import annotations

from typing import Any

from binio.spec import node_name, output_index
from ckpt2pb import surgery

_IF_OPS = frozenset({"If", "StatelessIf"})


def _constant_predicate(nodes: dict[str, Any], reference: str) -> bool | None:
    """The predicate's value when it is a constant, through Identity chains; else None."""
    import tensorflow as tf

    name = node_name(reference)
    for _ in range(64):
        node = nodes.get(name)
        if node is None:
            return None
        if node.op == "Identity":
            name = node_name(node.input[0])
            continue
        if node.op == "Const":
            value = tf.make_ndarray(node.attr["value"].tensor)
            return bool(value) if value.size == 1 else None
        return None
    return None


def _inline(graph_def: Any, if_node: Any, function: Any, branch: str) -> None:
    from tensorflow.python.framework.function_def_to_graph import (  # no public API turns a FunctionDef into nodes
        function_def_to_graph_def,
    )

    body, flat_names = function_def_to_graph_def(function)
    prefix = f"{if_node.name}/{branch}/"
    data_inputs = [ref for ref in if_node.input[1:] if not ref.startswith("^")]
    controls = [ref for ref in if_node.input if ref.startswith("^")]
    arguments = {arg.name: data_inputs[i] for i, arg in enumerate(function.signature.input_arg)}
    for node in body.node:
        if node.name in arguments:
            continue
        copy = graph_def.node.add()
        copy.CopyFrom(node)
        copy.name = prefix + node.name
        rewritten = []
        for ref in node.input:
            is_control = ref.startswith("^")
            bare = ref.lstrip("^")
            source = node_name(bare)
            if source in arguments:
                target = arguments[source]
                rewritten.append("^" + node_name(target) if is_control else target)
            else:
                rewritten.append(("^" if is_control else "") + prefix + bare)
        if not node.input:  # constants of the branch ran under the If's control inputs
            rewritten.extend(controls)
        del copy.input[:]
        copy.input.extend(rewritten)
    def outside(ret: str) -> str:
        """A branch result as a tensor of the outer graph: an inlined node's output, or an If input passed through."""
        flat = flat_names.get(ret, ret)
        if node_name(flat) in arguments:
            return arguments[node_name(flat)]
        return prefix + (node_name(flat) if output_index(flat) == 0 else flat)

    results = [outside(function.ret[output.name]) for output in function.signature.output_arg]
    for index, target in enumerate(results):
        surgery.rewire(graph_def, f"{if_node.name}:{index}", target)
    for node in graph_def.node:  # control edges on the If now wait for its (first) result
        replaced = [("^" + node_name(results[0]) if results else None) if ref == f"^{if_node.name}" else ref
                    for ref in node.input]
        if replaced != list(node.input):
            del node.input[:]
            node.input.extend(ref for ref in replaced if ref is not None)


def fold_constant_conds(graph_def: Any) -> int:
    """Inlines the live branch of every If whose predicate is constant; returns how many were folded."""
    folded = 0
    while True:
        nodes = {node.name: node for node in graph_def.node}
        functions = {f.signature.name: f for f in graph_def.library.function}
        target = None
        for node in graph_def.node:
            if node.op in _IF_OPS:
                predicate = _constant_predicate(nodes, node.input[0])
                if predicate is not None:
                    target = (node, predicate)
                    break
        if target is None:
            break
        node, predicate = target
        branch = "then_branch" if predicate else "else_branch"
        _inline(graph_def, node, functions[node.attr[branch].func.name], branch.removesuffix("_branch"))
        kept = [n for n in graph_def.node if n.name != node.name]
        del graph_def.node[:]
        graph_def.node.extend(kept)
        folded += 1
    return folded  # the inlined branches' functions stay in the library: freeze prunes it once, after extraction


def prune_library(graph_def: Any) -> None:
    """Drops functions no node (nor any kept function) calls."""
    functions = {f.signature.name: f for f in graph_def.library.function}

    def called(nodes: Any) -> set[str]:
        names = set()
        for node in nodes:
            if node.op in functions:
                names.add(node.op)
            for value in node.attr.values():
                if value.HasField("func"):
                    names.add(value.func.name)
                names.update(f.name for f in value.list.func)
        return names

    keep: set[str] = set()
    frontier = called(graph_def.node)
    while frontier - keep:
        new = frontier - keep
        keep |= new
        frontier = set().union(*(called(functions[name].node_def) for name in new if name in functions))
    kept = [f for f in graph_def.library.function if f.signature.name in keep]
    del graph_def.library.function[:]
    graph_def.library.function.extend(kept)
    kept_gradients = [g for g in graph_def.library.gradient if g.function_name in keep]
    del graph_def.library.gradient[:]
    graph_def.library.gradient.extend(kept_gradients)


def fold_constant_switches(graph_def: Any) -> int:
    """TF1 control flow (`Switch`/`Merge`, as TF 1.x wrote tf.cond): a Switch whose predicate is constant passes
    its data straight to the live side; nodes of the dead side are dropped by the pruning that follows, and each
    Merge becomes an Identity of its one live input. Returns how many Switch nodes were folded."""
    nodes = {node.name: node for node in graph_def.node}
    dead_ports: set[str] = set()  # tensors that never carry a value: "switch:k"
    folded = 0
    for node in graph_def.node:
        if node.op not in ("Switch", "RefSwitch") or len(node.input) < 2:
            continue
        predicate = _constant_predicate(nodes, node.input[1])
        if predicate is None:
            continue
        live, dead_port = (1, 0) if predicate else (0, 1)
        data = node.input[0]
        surgery.rewire(graph_def, f"{node.name}:{live}", data)
        dead_ports.add(f"{node.name}:{dead_port}")
        folded += 1
    if not folded:
        return 0
    dead = _dead_nodes(graph_def, dead_ports)
    for node in graph_def.node:
        if node.op not in ("Merge", "RefMerge") or node.name in dead:
            continue
        data_inputs = surgery.data_inputs(node)
        live_inputs = [ref for ref in data_inputs if not _is_dead(ref, dead, dead_ports)]
        if len(live_inputs) == 1 and len(data_inputs) > 1:
            surgery.make_identity(node, node.attr["T"].type, [live_inputs[0]])
    return folded


def _is_dead(reference: str, dead: set[str], dead_ports: set[str]) -> bool:
    bare = reference.lstrip("^")
    full = bare if ":" in bare else f"{bare}:0"
    return node_name(bare) in dead or full in dead_ports


def _dead_nodes(graph_def: Any, dead_ports: set[str]) -> set[str]:
    """Nodes that read a dead Switch output, directly or through others; a Merge is dead only if all its data
    inputs are (it forwards whichever input is alive)."""
    dead: set[str] = set()
    changed = True
    while changed:
        changed = False
        for node in graph_def.node:
            if node.name in dead or not node.input:
                continue
            data_inputs = surgery.data_inputs(node)
            if node.op in ("Merge", "RefMerge"):
                is_dead = bool(data_inputs) and all(_is_dead(ref, dead, dead_ports) for ref in data_inputs)
            else:
                is_dead = any(_is_dead(ref, dead, dead_ports) for ref in node.input)
            if is_dead:
                dead.add(node.name)
                changed = True
    return dead
