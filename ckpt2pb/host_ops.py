"""Which ops of a graph act on the host when the graph runs: read or write files, call Python, talk to the network,
end or stall the process. A model file is data; one whose graph holds such ops would act on the machine of whoever
runs it (freeze's verification, compare's golden run, `run --backend tf`), so infer classifies every op before a
graph is imported or run and refuses the ones that act, by node and op, unless the user allows them.

The classification is data: `host_ops.json` beside this module, one row per op family with why it acts or not. An op
in no row acts when TensorFlow registers it as stateful (its state may live outside the tensors), and not otherwise.
A graph's functions (`FunctionDefLibrary`) are classified as the graph is: every op of a function the run reaches
counts.

TensorFlow runs some ops while it merely imports a graph: shape inference evaluates the constant inputs of a shape
(a `Reshape` to `Size(ReadFile("/etc/shadow"))` reads the file at import). `make_inert` puts a barrier (a stateful
`GuaranteeConst`, which the import never evaluates through) before the inputs of every acting op that is not
stateful, so that a graph read to be looked at (inspect, shape inference) acts in no way.
"""

from __future__ import annotations

import fnmatch
import functools
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from binio.errors import InferError, excerpt
from binio.names import node_name, tensor_name

TABLE = Path(__file__).with_name("host_ops.json")
ALLOW_FLAG = "--allow-host-ops"  # infer's options declare the field this flag comes from (allow_host_ops)
_SHOWN = 3  # acting nodes a refusal names before "and N more"
_IDENTITY_OPS = frozenset({"Identity", "Snapshot", "StopGradient"})
_CALL_OPS = frozenset({"PartitionedCall", "StatefulPartitionedCall"})  # inputs map one to one to the function's args
_SAVE_OPS = frozenset({"Save", "SaveV2", "SaveSlices", "MergeV2Checkpoints"})
_BARRIER_OP = "GuaranteeConst"  # stateful, so shape inference never evaluates through it; forwards its input
_BARRIER_SUFFIX = "/_infer_inert_"


class HostOpError(InferError):
    """A graph that would act on the host when run (write or read files, call Python...), refused."""


@dataclass(frozen=True)
class Family:
    """One row of host_ops.json."""

    name: str
    acts: bool
    patterns: tuple[str, ...]
    why: str
    saver: bool = False  # the checkpoint's own saver is not refused (its path is the one infer feeds)
    unless_attr: str = ""  # the row does not apply when this attribute says the op stays inside the process
    unless_is: tuple[str, ...] = ()
    unless_starts: tuple[str, ...] = ()

    def matches(self, op: str) -> bool:
        return any(fnmatch.fnmatchcase(op, pattern) for pattern in self.patterns)

    def applies(self, node: Any) -> bool:
        """Whether the row applies to `node` (its op matches and no `unless` attribute keeps it inside)."""
        if not self.matches(node.op):
            return False
        if not self.unless_attr:
            return True
        value = node.attr.get(self.unless_attr, None)
        if value is None:  # left out: the op's default, which is the harmless value for every row's attribute
            return False
        texts = [item.decode("utf-8", "replace") for item in value.list.s] if value.HasField("list") else \
            [value.s.decode("utf-8", "replace")]
        return any(text not in self.unless_is and not any(text.startswith(p) for p in self.unless_starts)
                   for text in texts)


UNLISTED = Family(name="stateful op in no row", acts=True, patterns=(),
                  why="TensorFlow registers it as stateful and host_ops.json does not say what it does: its state may "
                      "live outside the graph's tensors")


@functools.cache
def families() -> tuple[Family, ...]:
    """The rows of host_ops.json, in order: the first row that applies to a node classifies it."""
    document = json.loads(TABLE.read_text(encoding="utf-8"))
    rows = []
    for row in document["families"]:
        unless = row.get("unless", {})
        rows.append(Family(name=row["family"], acts=bool(row["acts"]), patterns=tuple(row["ops"]), why=row["why"],
                           saver=bool(row.get("saver", False)), unless_attr=unless.get("attr", ""),
                           unless_is=tuple(unless.get("is", ())), unless_starts=tuple(unless.get("starts", ()))))
    return tuple(rows)


def _is_stateful(op: str) -> bool:
    from tensorflow.python.framework import op_def_registry  # no public API reads an op's registration

    registered = op_def_registry.get(op)
    return bool(registered is not None and registered.is_stateful)


def family_of(node: Any) -> Family | None:
    """The row that classifies `node`; `UNLISTED` for a stateful op in no row; None for an op that computes only."""
    found = next((family for family in families() if family.applies(node)), None)
    if found is None and _is_stateful(node.op):
        return UNLISTED
    return found


@dataclass(frozen=True)
class HostOp:
    """One node whose op acts on the host."""

    node: str
    op: str
    family: str
    function: str = ""  # the graph function holding it; "" for the graph itself
    saver: bool = False  # the checkpoint's own saver: reads only the checkpoint infer names, never run to save

    def where(self) -> str:
        """``node 'w' (WriteFile)``, ``node 'w' (WriteFile) of function 'f'``: names quoted short and escaped."""
        inside = f" of function {excerpt(self.function)}" if self.function else ""
        return f"node {excerpt(self.node)} ({excerpt(self.op)[1:-1]}){inside}"

    def to_json(self) -> dict[str, Any]:
        return {"node": self.node, "op": self.op, "family": self.family, "function": self.function,
                "saver": self.saver}


# --- the graph, its functions and who calls them ------------------------------------------------------------------

def _called(node: Any, functions: dict[str, Any] | set[str]) -> Iterator[str]:
    """The library functions `node` runs: its op, when that names one, and every function-valued attribute."""
    if node.op in functions:
        yield node.op
    for value in node.attr.values():
        yield from _functions_in(value)


def functions_called_by(nodes: Iterable[Any], functions: dict[str, Any] | set[str]) -> set[str]:
    """The library functions (named in `functions`) the `nodes` call directly."""
    return {callee for node in nodes for callee in _called(node, functions) if callee in functions}


def _functions_in(value: Any) -> Iterator[str]:
    if value.HasField("func"):
        yield value.func.name
        for inner in value.func.attr.values():
            yield from _functions_in(inner)
    elif value.HasField("list"):
        for item in value.list.func:
            yield item.name
            for inner in item.attr.values():
                yield from _functions_in(inner)


def _data_inputs(node: Any) -> list[str]:
    return [ref for ref in node.input if not ref.startswith("^")]


class _Library:
    """A GraphDef's nodes and functions indexed for the walks below."""

    def __init__(self, graph_def: Any) -> None:
        self.graph_def = graph_def
        self.nodes = {node.name: node for node in graph_def.node}
        self.functions = {function.signature.name: function for function in graph_def.library.function}
        self.bodies = {name: {node.name: node for node in function.node_def}
                       for name, function in self.functions.items()}
        # function -> (the scope of its caller, "" for the graph; the calling node), for calls whose inputs are the
        # function's arguments in order
        self.callers: dict[str, list[tuple[str, Any]]] = {}
        for scope, nodes in (("", graph_def.node), *((name, f.node_def) for name, f in self.functions.items())):
            for node in nodes:
                callee = node.op if node.op in self.functions else \
                    node.attr["f"].func.name if node.op in _CALL_OPS and "f" in node.attr else ""
                if callee:
                    self.callers.setdefault(callee, []).append((scope, node))

    def node_in(self, scope: str, ref: str) -> Any:
        name = ref.lstrip("^").split(":")[0]
        return self.nodes.get(name) if not scope else self.bodies.get(scope, {}).get(name)

    def args(self, scope: str) -> list[str]:
        return [arg.name for arg in self.functions[scope].signature.input_arg]

    def sources(self, scope: str, ref: str) -> list[tuple[str, str]]:
        """Where the value `ref` names in `scope` comes from one step up: through an identity op to its input,
        through a function argument to each caller's input; [] for a value made here."""
        if scope and ":" not in ref and ref in self.args(scope):
            index = self.args(scope).index(ref)
            return [(caller, _data_inputs(node)[index]) for caller, node in self.callers.get(scope, [])
                    if index < len(_data_inputs(node))]
        node = self.node_in(scope, ref)
        if node is not None and node.op in _IDENTITY_OPS and _data_inputs(node):
            return [(scope, _data_inputs(node)[0])]
        return []

    def origins(self, scope: str, ref: str) -> set[tuple[str, str]]:
        """The values `ref` is, past identities and function arguments: (scope, tensor) pairs."""
        found: set[tuple[str, str]] = set()
        pending, seen = [(scope, ref)], set()
        while pending:
            item = pending.pop()
            if item in seen:
                continue
            seen.add(item)
            up = self.sources(*item)
            if up:
                pending.extend(up)
            else:
                found.add((item[0], tensor_name(item[1]) if not item[0] else item[1]))
        return found

    def ancestors_reach(self, scope: str, refs: Iterable[str], target: tuple[str, str]) -> bool:
        """Whether any of `refs` is computed from the value `target` (data inputs, through function arguments)."""
        pending, seen = [(scope, ref) for ref in refs], set()
        while pending:
            where, ref = pending.pop()
            if (where, ref) in seen:
                continue
            seen.add((where, ref))
            if (where, tensor_name(ref) if not where else ref) == target:
                return True
            up = self.sources(where, ref)
            if up:
                pending.extend(up)
                continue
            node = self.node_in(where, ref)
            if node is not None:
                pending.extend((where, parent) for parent in _data_inputs(node))
        return False


# --- classification -----------------------------------------------------------------------------------------------

def _saver_target(saver_def: Any) -> tuple[str, str] | None:
    name = getattr(saver_def, "filename_tensor_name", "") if saver_def is not None else ""
    return ("", tensor_name(name)) if name else None


def _is_savers_own(library: _Library, scope: str, node: Any, target: tuple[str, str] | None) -> bool:
    """A save or restore op of the checkpoint's saver: a restore reads exactly the file name the saver is fed (the
    checkpoint infer names), a save (never run by infer) writes at a name made from it."""
    if target is None or not _data_inputs(node):
        return False
    if node.op in _SAVE_OPS:
        return library.ancestors_reach(scope, _data_inputs(node), target)
    return library.origins(scope, _data_inputs(node)[0]) == {target}


def _reached(library: _Library, roots: Iterable[str], fed: frozenset[str]) -> tuple[set[str], set[str]]:
    """The graph nodes a run of `roots` (tensors or nodes) executes with the tensors `fed` fed, and every function
    they call, directly or not."""
    nodes: set[str] = set()
    pending = [root for root in roots if tensor_name(root) not in fed or not _is_tensor(root)]
    while pending:
        ref = pending.pop()
        name = node_name(ref)
        if name in nodes or name not in library.nodes:
            continue
        nodes.add(name)
        for parent in library.nodes[name].input:
            if parent.startswith("^") or tensor_name(parent) not in fed:
                pending.append(parent)
    functions = _functions_called(library, (library.nodes[name] for name in nodes))
    return nodes, functions


def _is_tensor(ref: str) -> bool:
    return ":" in ref and ref.rpartition(":")[2].isdigit()


def _functions_called(library: _Library, nodes: Iterable[Any]) -> set[str]:
    found: set[str] = set()
    pending = [callee for node in nodes for callee in _called(node, library.functions)]
    while pending:
        name = pending.pop()
        if name in found or name not in library.functions:
            continue
        found.add(name)
        pending.extend(callee for node in library.functions[name].node_def
                       for callee in _called(node, library.functions))
    return found


def find_host_ops(graph_def: Any, *, saver_def: Any = None, roots: Iterable[str] | None = None,
                  fed: Iterable[str] = ()) -> tuple[HostOp, ...]:
    """The nodes of `graph_def` whose ops act on the host, the saver's own marked `saver`. With `roots` (the
    tensors fetched and the ops run), only what such a run executes, `fed` tensors cut off; without, every node and
    every function of the library."""
    library = _Library(graph_def)
    if roots is None:
        graph_nodes: Iterable[Any] = graph_def.node
        functions: Iterable[str] = library.functions
    else:
        reached, called = _reached(library, roots, frozenset(tensor_name(name) for name in fed))
        graph_nodes = [node for node in graph_def.node if node.name in reached]
        functions = sorted(called)
    target = _saver_target(saver_def)
    found: list[HostOp] = []
    for scope, nodes in (("", graph_nodes), *((name, library.functions[name].node_def) for name in functions)):
        for node in nodes:
            family = family_of(node)
            if family is None or not family.acts:
                continue
            own = family.saver and _is_savers_own(library, scope, node, target)
            found.append(HostOp(node=node.name, op=node.op, family=family.name, function=scope, saver=own))
    return tuple(found)


def acting(found: Iterable[HostOp]) -> tuple[HostOp, ...]:
    """The host ops a run would act through: all but the checkpoint saver's own."""
    return tuple(op for op in found if not op.saver)


def refuse_host_ops(found: Iterable[HostOp], origin: object, *, allow: bool) -> None:
    """Refuses, in one line naming `origin` and the first nodes with their ops, a graph `found` says acts on the
    host, unless `allow` (the user's --allow-host-ops)."""
    ops = acting(found)
    if not ops or allow:
        return
    named = "; ".join(f"{op.where()}: {op.family}" for op in ops[:_SHOWN])
    more = f"; and {len(ops) - _SHOWN} more" if len(ops) > _SHOWN else ""
    raise HostOpError(f"{origin}: the graph holds ops that act on this machine when it runs ({named}{more}); "
                      "infer runs no such graph",
                      hint=f"infer inspect lists them; if you trust this model's author, pass {ALLOW_FLAG}")


# --- inert: a graph imported to be looked at ----------------------------------------------------------------------

def _input_types(node: Any, op_def: Any) -> list[int]:
    """The dtype of each data input of `node`, from its op's registration and its attributes."""
    attrs = {attr.name: attr for attr in op_def.attr}

    def attr(name: str) -> Any:
        if name in node.attr:
            return node.attr[name]
        return attrs[name].default_value if name in attrs else None

    types: list[int] = []
    for arg in op_def.input_arg:
        if arg.type_list_attr:
            value = attr(arg.type_list_attr)
            types.extend(value.list.type if value is not None else [])
            continue
        dtype = arg.type
        if not dtype and arg.type_attr:
            value = attr(arg.type_attr)
            dtype = value.type if value is not None else 0
        count = attr(arg.number_attr).i if arg.number_attr and attr(arg.number_attr) is not None else 1
        types.extend([dtype] * count)
    return types


def make_inert(graph_def: Any, *, saver_def: Any = None) -> tuple[HostOp, ...]:
    """Puts a barrier before every data input of every acting op TensorFlow would evaluate while importing
    `graph_def` (a stateless one: the import never evaluates a stateful op), in place, in the graph and in its
    functions, so that importing it reads no file and calls nothing. A barrier forwards its input when run: a graph
    run with --allow-host-ops computes what it did. Returns every acting op found, the saver's included."""
    from tensorflow.python.framework import op_def_registry  # no public API reads an op's registration

    library = _Library(graph_def)
    scopes = (("", graph_def.node, graph_def), *((name, f.node_def, f) for name, f in library.functions.items()))
    for scope, nodes, holder in scopes:
        for node in list(nodes):
            family = family_of(node)
            op_def = op_def_registry.get(node.op)
            if family is None or not family.acts or op_def is None or op_def.is_stateful:
                continue
            _barrier_inputs(node, _input_types(node, op_def), holder, in_function=bool(scope))
    return find_host_ops(graph_def, saver_def=saver_def)


def is_barrier(node: Any) -> bool:
    """Whether `node` is a barrier `make_inert` added (not the model's own)."""
    return node.op == _BARRIER_OP and _BARRIER_SUFFIX in node.name


def _barrier_inputs(node: Any, types: list[int], holder: Any, *, in_function: bool) -> None:
    index = 0
    for position, ref in enumerate(node.input):
        if ref.startswith("^"):
            continue
        if index < len(types) and types[index] and _BARRIER_SUFFIX not in ref:
            barrier = (holder.node_def if in_function else holder.node).add()
            barrier.name = f"{node.name}{_BARRIER_SUFFIX}{index}"
            barrier.op = _BARRIER_OP
            barrier.input.append(ref)
            barrier.attr["T"].type = types[index]
            node.input[position] = f"{barrier.name}:output:0" if in_function else barrier.name
        index += 1
