"""The pre-check before the device: every op of the frozen pb against the chosen chip's operator table, before
anything runs. It names the ops ATC would not convert for that chip (a TF type its parser does not map, E12011;
or no kernel on AI Core nor AI CPU, EZ3003) and those that would fall to AI CPU (slow on the device), each by node
name and op type, with the hint that applies: a chip whose table has a kernel, a rewrite, a custom op.

The table is a 2022 snapshot (`atc_wrap.precision.op_tables`): what it lacks a newer CANN may have, so the caller
refuses only where it must (an om) and lets the user go on (`--allow-unsupported`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final, Literal

from atc_wrap.precision.op_tables import FAMILIES, OpTable, load_op_table
from atc_wrap.precision.plan import AICORE, AICPU, NOWHERE, PrecisionPlan, float_dtype, place

# Why an op is named: no mapping in ATC's TF parser, no kernel on either engine, or only an AI CPU one.
Problem = Literal["no_mapping", "no_kernel", "aicpu"]
NO_MAPPING: Final = "no_mapping"
NO_KERNEL: Final = "no_kernel"
ON_AICPU: Final = "aicpu"
# Graph structure, which no engine computes: inputs, constants, control-only nodes.
_STRUCTURE = frozenset({"Placeholder", "Const", "NoOp"})
_SHOWN = 8


@dataclass(frozen=True)
class OpFinding:
    """One op the chip's table does not run on AI Core: why, and what to do about it."""

    node: str
    op_type: str
    problem: Problem
    detail: str
    hint: str

    def describe(self) -> str:
        return f"{self.node} ({self.op_type}): {self.detail}"


@dataclass(frozen=True)
class PreCheck:
    """What the pre-check found for one chip."""

    chip: str
    family: str
    table_date: str
    unconvertible: tuple[OpFinding, ...]
    aicpu: tuple[OpFinding, ...]

    def lines(self) -> tuple[str, ...]:
        """The findings, a line each kind, then one line per distinct hint."""
        found = []
        where = f"{self.chip}'s operator table ({self.family}, {self.table_date})"
        if self.unconvertible:
            found.append(f"pre-check: {_ops(len(self.unconvertible))} ATC would not convert by {where}: "
                         + _listed(self.unconvertible, detailed=True))
            found.extend(f"  hint: {hint}" for hint in dict.fromkeys(f.hint for f in self.unconvertible))
        if self.aicpu:
            found.append(f"pre-check: {_ops(len(self.aicpu))} would run on AI CPU (slow on the device) by {where}: "
                         + _listed(self.aicpu, detailed=False))
        return tuple(found)

    def refusal(self) -> str:
        """The one-line refusal of an om with unconvertible ops."""
        return (f"{_ops(len(self.unconvertible))} ATC cannot convert for {self.chip} (operator table of "
                f"{self.table_date}): " + _listed(self.unconvertible, detailed=True))


def _ops(count: int) -> str:
    return f"{count} op" if count == 1 else f"{count} ops"


def _listed(findings: Iterable[OpFinding], *, detailed: bool) -> str:
    items = list(findings)
    shown = [f.describe() if detailed else f"{f.node} ({f.op_type})" for f in items[:_SHOWN]]
    more = f"; ... ({len(items) - _SHOWN} more)" if len(items) > _SHOWN else ""
    return ("; " if detailed else ", ").join(shown) + more


def _families_with_kernel(op_type: str, family: str) -> list[str]:
    """The other families whose table has an AI Core kernel for the type."""
    found = []
    for other in FAMILIES:
        if other != family and load_op_table(other).lookup(op_type).kernel is not None:
            found.append(other)
    return found


def precheck(graph_def: object, table: OpTable, chip: str, plan: PrecisionPlan | None = None) -> PreCheck:
    """Every node of `graph_def` (a frozen pb's GraphDef) against `table` (the family of `chip`). With the
    conversion's `plan`, an op the mode sends to AI CPU is named too."""
    unconvertible: list[OpFinding] = []
    aicpu: list[OpFinding] = []
    planned = {entry.node: entry for entry in plan.ops} if plan is not None else {}
    for node in graph_def.node:  # type: ignore[attr-defined]
        if node.op in _STRUCTURE:
            continue
        support = table.lookup(node.op)
        if not support.mapped:
            unconvertible.append(OpFinding(
                node.name, node.op, NO_MAPPING, "no mapping in ATC's TF parser (E12011)",
                f"{node.op}: rewrite it with ops ATC maps (infer inspect lists the graph's op types), or register "
                "a custom op (a TF plugin with an AI Core or AI CPU kernel)"))
            continue
        engine = _engine(node, table)
        entry = planned.get(node.name)
        if entry is not None and entry.engine in (AICPU, NOWHERE) and engine == AICORE:
            engine = entry.engine  # the mode's doing (must_keep_origin_dtype on an fp16-only kernel): the plan says
            if engine == NOWHERE:
                continue  # refused by the plan itself, naming the mode
        if engine == NOWHERE:
            others = _families_with_kernel(node.op, table.family)
            chips = f"a different chip ({', '.join(others)} have one)" if others else "no chip's table has one"
            unconvertible.append(OpFinding(
                node.name, node.op, NO_KERNEL,
                f"no kernel on AI Core nor AI CPU for {table.family} (EZ3003)",
                f"{node.op}: {chips}; or rewrite it with ops the chip has, or add a custom op"))
        elif engine == AICPU:
            why = entry.why if entry is not None and entry.engine == AICPU else "no AI Core kernel, an AI CPU one"
            aicpu.append(OpFinding(node.name, node.op, ON_AICPU, why,
                                   "AI CPU runs it correctly but slowly; a chip with an AI Core kernel avoids it"))
    return PreCheck(chip=chip, family=table.family, table_date=table.date, unconvertible=tuple(unconvertible),
                    aicpu=tuple(aicpu))


def _engine(node: object, table: OpTable) -> str:
    """Where the table runs the node, whatever the mode; "host" for what needs no kernel: the parser's own ops
    (Identity, Reshape, Shape) and the graph-level ones (control flow, collectives)."""
    support = table.lookup(node.op)  # type: ignore[attr-defined]
    if support.kernel is not None and float_dtype(node) is None:
        return AICORE  # an op on integers: its kernel's float dtypes do not matter
    placed = place(support)
    if placed.engine != NOWHERE:
        return placed.engine
    if support.parser_builtin or (support.ascend_ops and all(kind in ("GELOCAL", "HCCL")
                                                             for kind in support.ascend_ops.values())):
        return "host"
    return NOWHERE
