"""Freeze's edits of the constant graph, as a named, ordered list of passes (tf2onnx runs its rewriters the same
way): each pass takes the graph and what the freeze plans (`Plan`), edits the graph in place (its nodes hold the
weights: none is copied) and says how many nodes it changed.

The order matters, and each step says why where it stands: inputs are pinned and values folded before anything is
pruned (a placeholder the outputs read must be seen as one); pruning comes before the control-flow folds (the
training side is never folded) and again after each fold that leaves nodes unread; the functions of folded conds
go last. `EDITS` run before the leftovers are checked, `CLEANUPS` after: they make the pb readable by TF 1.15 and
ATC and change nothing it computes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from binio.graph_types import GraphDef
from binio.spec import TensorSpec
from ckpt2pb import surgery
from ckpt2pb.controlflow import fold_constant_conds, fold_constant_switches, prune_library
from ckpt2pb.ranges import fold_decided_draws

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Plan:
    """What the freeze decided before the graph is edited."""

    inputs: tuple[TensorSpec, ...]
    replaced: dict[str, str]  # tensor (not a placeholder) -> temporary placeholder name
    sets: dict[str, Any]  # placeholder node -> numpy value
    set_texts: dict[str, str]
    output_nodes: tuple[str, ...] = ()

    @property
    def keep(self) -> list[str]:
        """The nodes pruning keeps: the outputs, and the placeholders standing in for replaced tensors."""
        return [*self.output_nodes, *self.replaced.values()]


@dataclass(frozen=True)
class FreezePass:
    """One edit of the constant graph: its name (in logs and tests) and the function that applies it."""

    name: str
    apply: Callable[[Any, Plan], int]  # (graph_def, plan) -> nodes changed

    def __call__(self, graph_def: GraphDef, plan: Plan) -> int:
        changed = self.apply(graph_def, plan)
        log.debug("freeze pass %s: %d nodes", self.name, changed)
        return changed


def pin_inputs(graph_def: GraphDef, plan: Plan) -> int:
    """Each input a placeholder of its planned dtype and shape; a tensor that is not one (an iterator's output)
    is replaced by a new placeholder that its readers read instead."""
    import tensorflow as tf

    nodes = {node.name: node for node in graph_def.node}
    changed = 0
    for spec in plan.inputs:
        dtype_enum = tf.as_dtype(spec.dtype).as_datatype_enum
        shape = tuple(-1 if d is None else d for d in spec.shape)
        if spec.name in plan.replaced:
            surgery.add_placeholder(graph_def, plan.replaced[spec.name], dtype_enum, shape)
            surgery.rewire(graph_def, spec.name, plan.replaced[spec.name])
            changed += 1
        elif spec.node in nodes:
            surgery.make_placeholder(nodes[spec.node], dtype_enum, shape)
            changed += 1
    return changed


def fold_assignments(graph_def: GraphDef, plan: Plan) -> int:
    """Each placeholder given a value (--set is_training=false) made a constant of it."""
    nodes = {node.name: node for node in graph_def.node}
    for name, value in plan.sets.items():
        if name in nodes:
            surgery.make_constant(nodes[name], value)
    return sum(1 for name in plan.sets if name in nodes)


def fold_defaults(graph_def: GraphDef, plan: Plan) -> int:
    """Each PlaceholderWithDefault left (is_training with its default) reads its default."""
    folded = 0
    for node in graph_def.node:
        if node.op == "PlaceholderWithDefault":
            surgery.fold_to_default(node)
            folded += 1
    return folded


def prune(graph_def: GraphDef, plan: Plan) -> int:
    """Only what the outputs (and the replacement placeholders) read, by data, control and colocation edges."""
    return surgery.prune_to(graph_def, plan.keep)


def fold_conds(graph_def: GraphDef, plan: Plan) -> int:
    """tf.cond (v1 Switch/Merge and v2 If) on a constant predicate replaced by its live branch."""
    folded = fold_constant_conds(graph_def, keep=set(plan.output_nodes)) + fold_constant_switches(graph_def)
    if folded:
        log.info("folded %d tf.cond with a constant predicate to their live branch", folded)
    return folded


def fold_draws(graph_def: GraphDef, plan: Plan) -> int:
    """Random draws whose outcome a constant decides (dropout with its switch off) folded; their samplers left
    unread for the next prune."""
    return fold_decided_draws(graph_def, keep=plan.keep)


def strip_checks(graph_def: GraphDef, plan: Plan) -> int:
    """Assert and CheckNumerics (training-time guards ATC has no kernel for) taken out of the data path."""
    return surgery.strip_checks(graph_def)


def drop_unused_functions(graph_def: GraphDef, plan: Plan) -> int:
    """The function library's entries no node calls any more (the folded or stripped conds')."""
    before = len(graph_def.library.function)
    prune_library(graph_def)
    return before - len(graph_def.library.function)


def clear_devices(graph_def: GraphDef, plan: Plan) -> int:
    """Device placements of the training machine (/job:worker/GPU:3) dropped."""
    surgery.clear_devices(graph_def)
    return 0


def strip_stale_colocation(graph_def: GraphDef, plan: Plan) -> int:
    """Colocation constraints naming nodes the pruning removed dropped: TF refuses to import them."""
    surgery.strip_stale_colocation(graph_def)
    return 0


def strip_default_attrs(graph_def: GraphDef, plan: Plan) -> int:
    """Attributes equal to their op's default removed (TF's strip-default-attrs): a newer TF's additions, such
    as FusedBatchNormV3's exponential_avg_factor, are what TF 1.15 and ATC's parser refuse."""
    return surgery.strip_default_attrs(graph_def)


# The edits, in order: values first, then pruning, then the folds that pruning exposes, each followed by a prune.
EDITS: tuple[FreezePass, ...] = (
    FreezePass("pin-inputs", pin_inputs),
    FreezePass("fold-assignments", fold_assignments),
    FreezePass("fold-defaults", fold_defaults),
    FreezePass("prune", prune),  # before the folds: the training side is never folded
    FreezePass("fold-conds", fold_conds),
    FreezePass("prune", prune),
    FreezePass("fold-draws", fold_draws),  # dropout with its switch off: the samplers left unread go below
    FreezePass("strip-checks", strip_checks),
    FreezePass("prune", prune),
    FreezePass("drop-unused-functions", drop_unused_functions),  # the functions of the conds folded above
)
# After the leftovers are checked: for the graph's readers, not its numbers.
CLEANUPS: tuple[FreezePass, ...] = (
    FreezePass("clear-devices", clear_devices),
    FreezePass("strip-stale-colocation", strip_stale_colocation),
    FreezePass("strip-default-attrs", strip_default_attrs),
)


def run_passes(graph_def: GraphDef, plan: Plan, passes: tuple[FreezePass, ...]) -> dict[str, int]:
    """Applies `passes` in order; returns nodes changed by pass name (summed over a pass that runs twice)."""
    changed: dict[str, int] = {}
    for step in passes:
        changed[step.name] = changed.get(step.name, 0) + step(graph_def, plan)
    return changed
