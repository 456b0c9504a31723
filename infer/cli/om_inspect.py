"""`infer inspect MODEL.om` printed: what an om says about its model, as `infer.inspect` read it without CANN
(`atc_wrap.ascend_files.om_model.read_om`)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from infer.cli.console import out, plain_output
from infer.cli.console import table as plain_or_boxed_table

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from atc_wrap.ascend_files.om_model import OmIo, OmModel, OmTensor


def _shape(shape: tuple[int, ...] | None) -> str:
    if shape is None:
        return ""
    return "(" + ",".join("?" if d < 0 else str(d) for d in shape) + ")"


def _table(title: str, columns: tuple[str, ...]) -> Table:
    table = plain_or_boxed_table(title)
    wraps = not plain_output()  # off a terminal every row is one line, for grep
    for column in columns:
        fused = column == "TF nodes fused into it"
        table.add_column(column, no_wrap=not (fused and wraps), max_width=60 if fused and wraps else None)
    return table


def _origin(tensor: OmTensor) -> str:
    return " ".join(part for part in (tensor.origin_format, _shape(tensor.origin_shape)) if part)


def _bytes(tensor: OmTensor) -> str:
    """The tensor's own size, dtype x shape (what msame writes for an output); the descriptor's size, which GE
    aligns, where that cannot be computed."""
    from binio.dtypes import DTYPE_NAMES, dtype

    if tensor.dtype in DTYPE_NAMES and all(d >= 0 for d in tensor.shape):
        return f"{math.prod(tensor.shape) * dtype(tensor.dtype).itemsize:,}"
    return f"{tensor.size:,}"


def _io_table(title: str, items: tuple[OmIo, ...], last: str) -> Table:
    table = _table(title, ("#", "name", "dtype", "shape", "format", "origin", last, "bytes"))
    for item in items:
        tensor = item.tensor
        table.add_row(str(item.index), item.name, tensor.dtype, _shape(tensor.shape), tensor.format, _origin(tensor),
                      item.op_name, _bytes(tensor))
    return table


def _header_lines(model: OmModel) -> list[str]:
    header = model.header
    version = (f"header 0x{header.version:08X} (model_num {header.model_num})" if header.model_num is not None
               else f"header 0x{header.version:08X} (the first version: no model_num)")
    lines = [f"{model.path}: om, {version}, {'encrypted' if header.is_encrypted else 'not encrypted'}, om IR version "
             f"{header.om_ir_version}, platform {header.platform_version or '?'} (type {header.platform_type}), "
             f"model {model.name or header.name}"]
    made = f"ATC {model.atc_version or '(version not recorded)'}"
    made += f" for {model.soc_version}" if model.soc_version else " (no soc_version recorded: older ATC)"
    details = [f"{key} {value}" for key, value in (("framework", model.framework_type), ("target", model.target_type),
                                                    ("opp", model.opp_version)) if value]
    lines.append(made + (f" ({', '.join(details)})" if details else ""))
    if model.atc_cmdline:
        lines.append(f"ATC command: {model.atc_cmdline}")
    lines.append("partitions: " + ", ".join(f"{p.name} {p.size:,} B" for p in model.partitions))
    return lines


def _aipp_lines(model: OmModel) -> list[str]:
    from atc_wrap.ascend_files.ge_attrs import attr_json

    if not model.aipp:
        return ["AIPP: none"]
    return [f"AIPP on {config.op_name}: " + ", ".join(f"{key}={attr_json(value)}" for key, value in config.params)
            for config in model.aipp]


def _gear_line(model: OmModel) -> str:
    gears = model.gears
    if gears is None:
        return "dynamic gears: none (static shapes)"
    shown = "; ".join(",".join(str(v) for v in gear) for gear in gears.gears) or gears.all_gears_info or "none listed"
    order = f" of {', '.join(gears.shape_order)}" if gears.shape_order else ""
    return f"dynamic gears ({gears.kind}{order}, on {gears.op_name or 'the NetOutput'}): {shown}"


def _fusion_table(model: OmModel) -> Table:
    table = _table("Fusion map (om op <- TF nodes; outputs from TF node:index)",
                   ("om op", "type", "TF nodes fused into it", "outputs from"))
    for entry in model.fusion_map:
        origins = ", ".join(f"{out.origin_name}:{out.origin_output_index if out.origin_output_index is not None else 0}"
                            for out in entry.outputs if out.origin_name)
        table.add_row(entry.op_name, entry.op_type, ", ".join(entry.original_op_names), origins)
    return table


def _print(console: Console, table: Table) -> None:
    """A table no narrower than its cells: names are for copying, never cut short (only the fusion map's lists of
    TF nodes wrap, on a terminal)."""
    needed = console.measure(table, options=console.options.update_width(100_000)).maximum
    console.width = max(console.width, needed)
    console.print(table)


def print_om(model: OmModel, *, top: int) -> None:
    """The om's header lines, its inputs and outputs, AIPP, gears, the `top` op types and its fusion map."""
    console = out()
    for line in _header_lines(model):
        console.print(line, markup=False)
    _print(console, _io_table("Inputs", model.inputs, "op"))
    _print(console, _io_table("Outputs", model.outputs, "from op"))
    given = ", ".join(model.out_node_names) or "none recorded"
    console.print(f"output nodes ATC was given (--out_nodes): {given}", markup=False)
    for line in _aipp_lines(model):
        console.print(line, markup=False)
    console.print(_gear_line(model), markup=False)
    histogram = _table(f"Op types ({len(model.ops)} ops)", ("op", "count"))
    for op_type, count in model.op_counts[:top]:
        histogram.add_row(op_type, str(count))
    console.print(histogram)
    if len(model.op_counts) > top:
        console.print(f"... {len(model.op_counts) - top} more op types (--top N, or --json)", markup=False)
    fusion = model.fusion_map
    if fusion:
        _print(console, _fusion_table(model))
    else:
        console.print("fusion map: no op names the TF nodes it came from", markup=False)
