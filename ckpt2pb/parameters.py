"""Which of a graph's variables the model's outputs are computed from.

A training checkpoint also holds what only training reads: the optimizer's slots (Adam's two moments, momentum
accumulators), its step counters and powers of beta. Counting them as the model's parameters overstates the model
two or three times over (an Adam-trained net: the slots alone are twice the weights), and the frozen pb then seems
to have lost most of them. Telling them apart by name (`/Adam`, `/Momentum`) would miss every optimizer the list
does not know; what is general is the data flow: a variable the outputs are computed from is the model's, one
that reaches no output only serves training."""

from __future__ import annotations

import math
from collections.abc import Iterable

from binio.graph_types import GraphDef
from binio.names import node_name
from ckpt2pb.source import VARIABLE_OPS
from ckpt2pb.surgery import reachable


def variables_feeding(graph_def: GraphDef, tensors: Iterable[str]) -> frozenset[str]:
    """The variable nodes that `tensors` are computed from, by data inputs only (a control input orders an op,
    it carries no value): a resource variable through its ReadVariableOp, a ref variable through its `read`."""
    variables = {node.name for node in graph_def.node if node.op in VARIABLE_OPS}
    return frozenset(variables & reachable(graph_def, [node_name(t) for t in tensors], data_only=True))


def elements_of(shapes: dict[str, list[int]], variables: frozenset[str]) -> int | None:
    """The elements of `variables` by their checkpoint shapes; None where the checkpoint keys them otherwise (an
    object-based checkpoint's `.ATTRIBUTES/VARIABLE_VALUE` names): no split is better than a wrong one."""
    known = [name for name in variables if name in shapes]
    if variables and not known:
        return None
    return sum(math.prod(shapes[name]) for name in known)
