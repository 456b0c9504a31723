"""`infer inspect model.json --precision`: the precision plan model.json records, one row per float op (where it
runs, its dtype, which rule gave it and why), after the plan's summary."""

from __future__ import annotations

from typing import TYPE_CHECKING

from atc_wrap.precision.plan import PrecisionPlan
from infer.cli.console import table as titled_table

if TYPE_CHECKING:
    from rich.console import Console

_WHY_WIDTH = 60  # the reasons wrap within this, however narrow the terminal (a pipe gets them whole)
_COLUMNS = ("node", "op", "Ascend op", "engine", "dtype", "decided by", "why")


def print_plan(plan: PrecisionPlan, console: Console) -> None:
    """The summary lines, then the whole plan as a table no narrower than its node names."""
    for line in plan.summary():
        console.print(line, markup=False)
    console.print(f"operator table: {plan.family}, {plan.table_date} ({plan.table_source})", markup=False)
    table = titled_table(f"Precision plan: {plan.where()}")
    widths = {"node": max((len(e.node) for e in plan.ops), default=4),
              "why": min(_WHY_WIDTH, max((len(e.why) for e in plan.ops), default=3))}
    for column in _COLUMNS:
        table.add_column(column, no_wrap=column in ("node", "op", "Ascend op", "dtype"), min_width=widths.get(column))
    for entry in plan.ops:
        why = entry.why + (f" [refused by ATC: {entry.refused}]" if entry.refused else "")
        table.add_row(entry.node, entry.op_type, entry.ascend_op or "-", entry.engine, entry.dtype or "legacy",
                      entry.decided_by, why)
    console.width = max(console.width, console.measure(table, options=console.options.update_width(10_000)).minimum)
    console.print(table)
