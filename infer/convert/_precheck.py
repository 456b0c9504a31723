"""Before anything runs: the conversion's precision plan and the pre-check of every op, from the chosen chip's
operator table (`atc_wrap.precision.plan`, `atc_wrap.precision.precheck`), for either target and for a dry run.

The chip is --soc-version's; the stand-in without one (or with one no table covers) assumes
`atc_wrap.atc.soc.ASSUMED_SOC_VERSION` and says so. What
ATC could not build as asked (an op the mode or a per-op control needs in a dtype the chip has no kernel for) is
refused for both targets; an op ATC cannot convert at all is refused for an om and a warning for the stand-in, which
still runs it. `--allow-unsupported` goes on past both: the tables are a 2022 snapshot.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from atc_wrap.atc.soc import ASSUMED_SOC_VERSION
from atc_wrap.errors import ConvertError
from atc_wrap.precision.modes import parse_input_fp16_nodes
from atc_wrap.precision.op_controls import OpControls, check_op_controls
from atc_wrap.precision.op_tables import OpTableError, op_table_for
from atc_wrap.precision.plan import PrecisionPlan, ascend_names, plan_precision, refuse_planned
from atc_wrap.precision.precheck import PreCheck, precheck
from infer.contract import ModelContract
from infer.convert.options import ConvertOptions


@dataclass(frozen=True)
class Prepared:
    """The plan and the pre-check's findings; None for a chip without a table (an om for a chip newer than it)."""

    plan: PrecisionPlan | None
    check: PreCheck | None
    lines: tuple[str, ...]  # what convert says about them: the plan's summary, then the findings


def prepare(contract: ModelContract, options: ConvertOptions, graph_def: Any, controls: OpControls, *,
            target: str) -> Prepared:
    """The plan of the contract's pb for `target` (om | onnx) under `options`, after refusing what must be."""
    chip = options.soc_version or ASSUMED_SOC_VERSION
    assumed = not options.soc_version
    notes: tuple[str, ...] = ()
    try:
        table = op_table_for(chip)
    except OpTableError as exc:
        if target == "om":
            return Prepared(None, None, (f"no pre-check and no precision plan: {exc.message}",))
        # The stand-in needs a table to emulate: it plans for the assumed chip, and says so.
        notes = (f"no operator table for --soc-version {chip}: the stand-in plans for {ASSUMED_SOC_VERSION} instead",)
        chip, assumed = ASSUMED_SOC_VERSION, True
        table = op_table_for(chip)
    check_op_controls(controls, graph_def, contract.pb_path, options.precision_mode, emulated=target == "onnx",
                      ascend_types=ascend_names(graph_def, table))
    fp16_nodes = set(parse_input_fp16_nodes(options.input_fp16_nodes, contract.inputs))
    plan = refuse_planned(plan_precision(graph_def, table, options.precision_mode, chip=chip,
                                         chip_assumed=assumed, controls=controls,
                                         fp16_inputs=fp16_nodes),
                          allow_unsupported=options.allow_unsupported)
    check = precheck(graph_def, table, chip, plan)
    if check.unconvertible and target == "om" and not options.allow_unsupported:
        raise ConvertError(f"{contract.pb_path}: {check.refusal()}",
                           hint=f"{check.unconvertible[0].hint}; the table is of {check.table_date}, and a newer CANN "
                                "may convert it: --allow-unsupported runs ATC anyway")
    return Prepared(plan, check, notes + plan.summary() + check.lines())
