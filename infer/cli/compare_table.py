"""compare's terminal table, laid out for the width at hand: no number is ever cut.

One row per output when every column fits the width; otherwise one block per output, its ``name value`` pairs
packed into lines that fit (as Polygraphy prints its statistics). A pipe or a log file gets the table whole.
"""

from __future__ import annotations

from infer.compare.metrics import ValueCounts, shown
from infer.compare.result import CompareResult, LayerwiseResult, OutputResult

# The metric columns: short header -> msaccucmp's name.
COLUMNS = {"cosine": "CosineSimilarity", "RED": "RelativeEuclideanDistance", "KL": "KullbackLeiblerDivergence",
           "RMSE": "RootMeanSquareError", "MeanRE": "MeanRelativeError", "MaxAbsErr": "MaxAbsoluteError",
           "allclose": "AllclosePassRate"}
_GAP = "  "


def fp16_cell(counts: ValueCounts, layers: LayerwiseResult | None) -> str:
    """The fp16 column: the cause of an inf/NaN where TF is finite, as far as the outputs (or --layerwise) tell."""
    if layers is not None and layers.nonfinite is not None and counts.nonfinite_actual_where_golden_finite:
        return layers.nonfinite.cause
    if counts.beyond_fp16_golden:
        return "overflow"  # TF's own values are past 65504: fp16 cannot hold them
    return "inf/NaN" if counts.nonfinite_actual_where_golden_finite else "ok"


def _cells(output: OutputResult, layers: LayerwiseResult | None = None) -> list[tuple[str, str]]:
    m = output.metrics
    cells = [(short, shown(m.value(name), name)) for short, name in COLUMNS.items()]
    cells += [("NaN/inf", str(m.counts.nan_actual + m.counts.inf_actual)),
              ("fp16", fp16_cell(m.counts, layers)), ("result", "pass" if output.passed else "FAIL")]
    return cells


def _table(result: CompareResult) -> list[str]:
    headers = ["output", *(name for name, _ in _cells(result.outputs[0]))] if result.outputs else ["output"]
    rows = [[output.name, *(value for _, value in _cells(output, result.layerwise))] for output in result.outputs]
    widths = [max(len(row[i]) for row in (headers, *rows)) for i in range(len(headers))]

    def line(cells: list[str]) -> str:
        first = cells[0].ljust(widths[0])
        return _GAP.join([first, *(cell.rjust(width) for cell, width in zip(cells[1:], widths[1:], strict=True))])

    return [line(headers), *(line(row) for row in rows)]


def _blocks(result: CompareResult, width: int) -> list[str]:
    lines = []
    for output in result.outputs:
        lines.append(output.name)
        current = " "
        for name, value in _cells(output, result.layerwise):
            pair = f" {name} {value}"
            if len(current) > 1 and len(current) + len(pair) > width:
                lines.append(current)
                current = " "
            current += pair
        lines.append(current)
    return lines


def metrics_table(result: CompareResult, width: int | None) -> list[str]:
    """The title, then the table (or, narrower than the table, one block per output); `width` None: no limit."""
    title = f"{result.samples} samples, {result.padding} padding rows left out"
    table = _table(result)
    if width is None or max(len(line) for line in table) <= width:
        return [title, *table]
    return [title, *_blocks(result, width)]
