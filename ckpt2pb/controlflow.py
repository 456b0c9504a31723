"""Folding `tf.cond` whose predicate became a constant (a folded `is_training`): only the live branch stays.

TF2's graph mode writes tf.cond as a functional `If` op whose branches live in the function library; once the
predicate is a constant (TensorFlow computes it, through whatever ops lie between it and the constants), the
taken branch is inlined in the If's place and the If goes. Function calls (`PartitionedCall`, a SavedModel
signature's `StatefulPartitionedCall`) are inlined the same way. The pb then holds plain ops that older consumers
(TF 1.15, ATC's parser) read and that carry static shapes again.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from binio.graph_types import GraphDef
from binio.spec import node_name, output_index
from ckpt2pb import surgery
from ckpt2pb.constfold import constant_values
from ckpt2pb.errors import FreezeError

_IF_OPS = frozenset({"If", "StatelessIf"})
_CALL_OPS = frozenset({"PartitionedCall", "StatefulPartitionedCall"})
_MAX_DEPTH = 64  # rounds of inlining (each inlines one level of nesting); a recursive function stops here


def _library_graph(graph_def: GraphDef) -> Any:
    """A tf.Graph holding only `graph_def`'s function library: what turning a function that calls others into
    nodes looks the callees up in."""
    import tensorflow as tf

    library = tf.compat.v1.GraphDef()
    library.library.CopyFrom(graph_def.library)
    library.versions.CopyFrom(graph_def.versions)
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.import_graph_def(library, name="")
    return graph


def _inline(graph_def: GraphDef, caller: Any, function: Any, arguments: list[str], scope: str, keep: bool,
            library: Any) -> list[str] | None:
    """Puts `function`'s body in the graph beside `caller` (an If or a call op), its arguments read from
    `arguments`. A caller in `keep` (an output the user named) becomes an Identity (IdentityN) of the body's
    results, so its tensor names live on: None. Otherwise returns the results, the tensors that the readers of the
    caller's outputs are to read instead (`_replace_callers` rewires them all at once and drops the caller)."""
    from tensorflow.python.framework.function_def_to_graph import (  # no public API turns a FunctionDef into nodes
        function_def_to_graph_def,
    )

    with library.as_default():
        body, flat_names = function_def_to_graph_def(function)
    prefix = f"{caller.name}/{scope}/"
    controls = [ref for ref in caller.input if ref.startswith("^")]
    bound = {arg.name: arguments[i] for i, arg in enumerate(function.signature.input_arg)}
    for node in body.node:
        if node.name in bound:
            continue
        copy = graph_def.node.add()
        copy.CopyFrom(node)
        copy.name = prefix + node.name
        rewritten = []
        for ref in node.input:
            is_control = ref.startswith("^")
            bare = ref.lstrip("^")
            source = node_name(bare)
            if source in bound:
                target = bound[source]
                rewritten.append("^" + node_name(target) if is_control else target)
            else:
                rewritten.append(("^" if is_control else "") + prefix + bare)
        if not node.input:  # constants of the body ran under the caller's control inputs
            rewritten.extend(controls)
        del copy.input[:]
        copy.input.extend(rewritten)

    def outside(ret: str) -> str:
        """A body result as a tensor of the outer graph: an inlined node's output, or an argument passed through."""
        flat = flat_names.get(ret, ret)
        if node_name(flat) in bound:
            return bound[node_name(flat)]
        return prefix + (node_name(flat) if output_index(flat) == 0 else flat)

    results = [outside(function.ret[output.name]) for output in function.signature.output_arg]
    types = [caller.attr["Tout"].list.type[i] if "Tout" in caller.attr else 0 for i in range(len(results))]
    if keep and results:
        surgery.make_identity_n(caller, types, [*results, *controls])
        return None
    return results


def _replace_callers(graph_def: GraphDef, replaced: dict[str, list[str]]) -> None:
    """Readers of each replaced caller's outputs read its results instead, control edges on it wait for its
    (first) result, and the callers go: one pass over the graph for all of them. A result may itself be an output
    of another caller replaced in the same round (a call fed by a call), so each reference is followed to its end."""
    data: dict[str, str] = {}
    control: dict[str, str | None] = {}
    for name, results in replaced.items():
        for index, target in enumerate(results):
            data[f"{name}:{index}"] = target
        if results:
            data[name] = results[0]
        control[f"^{name}"] = "^" + node_name(results[0]) if results else None

    def follow(ref: str) -> str | None:
        seen = 0
        while seen <= len(replaced):  # each step leaves one caller behind: a longer chain would be a cycle
            if ref in data:
                ref = data[ref]
            elif ref in control:
                found = control[ref]
                if found is None:
                    return None
                ref = found
            else:
                return ref
            seen += 1
        raise FreezeError(f"{ref}: the inlined function calls read each other in a cycle")

    for node in graph_def.node:
        if node.name in replaced:
            continue
        inputs = [follow(ref) for ref in node.input]
        if inputs != list(node.input):
            del node.input[:]
            node.input.extend(ref for ref in inputs if ref is not None)
    surgery.keep_nodes(graph_def, {node.name for node in graph_def.node} - replaced.keys())


def fold_constant_conds(graph_def: GraphDef, keep: Collection[str] = ()) -> int:
    """Inlines the live branch of every If whose predicate is constant (through any chain of stateless ops from
    constants: TensorFlow computes it), and the body of every function call, until none is left that can go.
    Nodes in `keep` (the outputs) keep their names. Returns how many Ifs were folded."""
    folded = 0
    for _ in range(_MAX_DEPTH):
        functions = {f.signature.name: f for f in graph_def.library.function}
        ifs = [node for node in graph_def.node if node.op in _IF_OPS]
        predicates = constant_values(graph_def, [node.input[0] for node in ifs]) if ifs else {}
        live = {}
        for node in ifs:
            value = predicates.get(node.input[0])
            if value is not None and value.size == 1:
                live[node.name] = "then_branch" if bool(value.reshape(())) else "else_branch"
        calls = [node.name for node in graph_def.node
                 if node.op in _CALL_OPS and node.attr["f"].func.name in functions]
        library = _library_graph(graph_def) if live or calls else None
        # Inlining appends nodes (indices of the present ones hold) and rewires the readers once, at the end.
        position = {n.name: i for i, n in enumerate(graph_def.node)}
        replaced: dict[str, list[str]] = {}
        for name in [*live, *calls]:
            node = graph_def.node[position[name]]
            if name in live:
                function, arguments, scope = node.attr[live[name]].func.name, node.input[1:], live[name][:-7]
            else:
                function, arguments, scope = node.attr["f"].func.name, node.input, "call"
            results = _inline(graph_def, node, functions[function],
                              [ref for ref in arguments if not ref.startswith("^")], scope, name in keep, library)
            if results is not None:
                replaced[name] = results
        _replace_callers(graph_def, replaced)
        folded += len(live)
        changed = bool(live or calls)
        if not changed:
            break
    return folded  # the inlined functions stay in the library: freeze prunes it once, after extraction


def prune_library(graph_def: GraphDef) -> None:
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


def fold_constant_switches(graph_def: GraphDef) -> int:
    """TF1 control flow (`Switch`/`Merge`, as TF 1.x wrote tf.cond): a Switch whose predicate is constant passes
    its data straight to the live side; nodes of the dead side are dropped by the pruning that follows, and each
    Merge becomes an Identity of its one live input. Returns how many Switch nodes were folded."""
    dead_ports: set[str] = set()  # tensors that never carry a value: "switch:k"
    folded = 0
    switches = [node for node in graph_def.node if node.op in ("Switch", "RefSwitch") and len(node.input) >= 2]
    predicates = constant_values(graph_def, [node.input[1] for node in switches]) if switches else {}
    for node in switches:
        value = predicates.get(node.input[1])
        if value is None or value.size != 1:
            continue
        live, dead_port = (1, 0) if bool(value.reshape(())) else (0, 1)
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


def _dead_nodes(graph_def: GraphDef, dead_ports: set[str]) -> set[str]:
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
