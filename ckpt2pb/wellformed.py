"""What TensorFlow crashes on, checked before a graph is handed to it: a graph function that calls itself (the import
recurses until the stack overflows: signal 11, no error), functions nested deeper than any model nests them, and
constants whose stored values disagree with their shape (numpy's "cannot reshape" where infer reads them) or that
expand a few values into more memory than a model file can hold.

A crash cannot be caught; a refusal names the file, the node or function, and what was expected.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from binio.errors import excerpt
from binio.memory import format_bytes
from ckpt2pb.errors import SourceError
from ckpt2pb.host_ops import functions_called_by

MAX_FUNCTION_DEPTH = 64  # functions calling functions: tf.function nests a few levels, a cond in a loop a few more
# A constant's values once expanded: protobuf holds at most 2 GiB, and a constant given by fewer values than its
# shape (TensorFlow repeats the last) is made whole in memory when the graph loads.
MAX_CONSTANT_BYTES = 2**31 - 1
_STRING = 7  # DT_STRING
_TYPED_VALUES = ("half_val", "float_val", "double_val", "int_val", "string_val", "scomplex_val", "int64_val",
                 "bool_val", "dcomplex_val", "resource_handle_val", "variant_val", "uint32_val", "uint64_val",
                 "float8_val")


class MalformedGraphError(SourceError):
    """A graph TensorFlow would crash on, or whose constants do not hold what their shape says."""


def check_graph_def(graph_def: Any, origin: object) -> None:
    """Refuses, naming `origin`, a graph whose functions call themselves or nest past `MAX_FUNCTION_DEPTH`, or that
    holds a constant whose values disagree with its shape."""
    _check_calls(graph_def, origin)
    _check_unique(graph_def, origin)
    for where, node in _all_nodes(graph_def):
        if node.op in ("Const", "HostConst") and "value" in node.attr:
            _check_constant(node, where, origin)


def _all_nodes(graph_def: Any) -> Iterator[tuple[str, Any]]:
    for node in graph_def.node:
        yield "", node
    for function in graph_def.library.function:
        for node in function.node_def:
            yield function.signature.name, node


def _check_unique(graph_def: Any, origin: object) -> None:
    """A node name given twice (in the graph, or in one function): every reader by name would take one of them."""
    scopes = [("", graph_def.node)] + [(f.signature.name, f.node_def) for f in graph_def.library.function]
    for scope, nodes in scopes:
        seen: set[str] = set()
        for node in nodes:
            if node.name in seen:
                inside = f" of function {excerpt(scope)}" if scope else ""
                raise MalformedGraphError(f"{origin}: node {excerpt(node.name)}{inside} is defined twice",
                                          hint="the file is damaged or was edited: re-export the model")
            seen.add(node.name)


def _check_calls(graph_def: Any, origin: object) -> None:
    """A cycle or a chain deeper than `MAX_FUNCTION_DEPTH` among the library's functions, walked without recursion."""
    functions = {function.signature.name: function for function in graph_def.library.function}
    callees = {name: sorted(functions_called_by(function.node_def, functions)) for name, function in functions.items()}
    depth: dict[str, int] = {}  # finished: the longest chain of calls from here
    for start in sorted(functions):
        if start in depth:
            continue
        path: list[str] = [start]
        on_path = {start}
        stack = [iter(callees[start])]
        while stack:
            callee = next(stack[-1], None)
            if callee is None:
                done = path.pop()
                on_path.discard(done)
                stack.pop()
                depth[done] = 1 + max((depth[c] for c in callees[done]), default=0)
                if depth[done] > MAX_FUNCTION_DEPTH:
                    raise MalformedGraphError(f"{origin}: graph function {excerpt(done)} nests calls "
                                              f"{depth[done]} deep, more than {MAX_FUNCTION_DEPTH}",
                                              hint="TensorFlow's import recurses once per level and can crash")
                continue
            if callee in on_path:
                cycle = [*path[path.index(callee):], callee]
                shown = " -> ".join(excerpt(name) for name in cycle[:6]) + (" -> ..." if len(cycle) > 6 else "")
                raise MalformedGraphError(f"{origin}: graph function {excerpt(callee)} calls itself ({shown})",
                                          hint="TensorFlow crashes (signal 11) importing a function that calls "
                                               "itself; this is no model TensorFlow can run")
            if callee in depth:
                continue
            path.append(callee)
            on_path.add(callee)
            stack.append(iter(callees[callee]))


def _check_constant(node: Any, where: str, origin: object) -> None:
    from tensorflow import as_dtype

    tensor = node.attr["value"].tensor
    name = f"constant {excerpt(node.name)}" + (f" of function {excerpt(where)}" if where else "")
    dims = [dim.size for dim in tensor.tensor_shape.dim]
    shape = "(" + ",".join(str(d) for d in dims) + ")"
    if any(d < 0 for d in dims):
        raise MalformedGraphError(f"{origin}: {name} has shape {shape}: a constant's dims are 0 or more")
    elements = math.prod(dims)
    try:
        dtype = as_dtype(tensor.dtype)
    except TypeError:
        raise MalformedGraphError(f"{origin}: {name} has dtype number {tensor.dtype}, which TensorFlow does not "
                                  "have") from None
    size = dtype.size if tensor.dtype != _STRING else 1
    if tensor.tensor_content:
        if tensor.dtype == _STRING or len(tensor.tensor_content) != elements * size:
            raise MalformedGraphError(f"{origin}: {name} holds {len(tensor.tensor_content)} bytes of data, its shape "
                                      f"{shape} {dtype.name} needs {elements * size}",
                                      hint="the file is damaged or was edited: re-export the model")
        return
    given = max((len(getattr(tensor, field)) for field in _TYPED_VALUES if hasattr(tensor, field)), default=0)
    per_element = 2 if tensor.dtype in (8, 18) else 1  # complex64/128 store two numbers per element
    if given > elements * per_element:
        raise MalformedGraphError(f"{origin}: {name} holds {given // per_element} values, more than the "
                                  f"{elements} of its shape {shape}",
                                  hint="the file is damaged or was edited: re-export the model")
    if tensor.dtype != _STRING and elements * size > MAX_CONSTANT_BYTES:
        raise MalformedGraphError(f"{origin}: {name} of shape {shape} {dtype.name} expands to "
                                  f"{format_bytes(elements * size)}, more than a model file holds "
                                  f"({format_bytes(MAX_CONSTANT_BYTES)})",
                                  hint="TensorFlow would allocate all of it when the graph loads")
