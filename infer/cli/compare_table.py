"""compare's terminal table, laid out for the width at hand: no number is ever cut.

One row per output when every column fits the width; otherwise one block per output, its ``name value`` pairs
packed into lines that fit (as Polygraphy prints its statistics). A pipe or a log file gets the table whole.
"""

from __future__ import annotations

from infer.compare.metric_names import shown
from infer.compare.result import CompareResult, OutputResult, fp16_cause

# The metric columns: short header -> msaccucmp's name.
COLUMNS = {"cosine": "CosineSimilarity", "RED": "RelativeEuclideanDistance", "KL": "KullbackLeiblerDivergence",
           "RMSE": "RootMeanSquareError", "MeanRE": "MeanRelativeError", "MaxAbsErr": "MaxAbsoluteError",
           "allclose": "AllclosePassRate"}
_GAP = "  "


def _cells(result: CompareResult, output: OutputResult) -> list[tuple[str, str]]:
    m = output.metrics
    cells = [(short, shown(m.value(name), name)) for short, name in COLUMNS.items()]
    cells += [("NaN/inf", str(m.counts.nan_actual + m.counts.inf_actual)),
              ("fp16", fp16_cause(output, result.layerwise, result.fp16_trouble)),
              ("result", "pass" if result.output_passed(output) else "FAIL")]
    return cells


def aligned(rows: list[list[str]], left: int = 1) -> list[str]:
    """Rows of cells in columns two spaces apart: the first `left` columns left-aligned (names), the rest
    right-aligned (numbers)."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]

    def line(cells: list[str]) -> str:
        return _GAP.join(cell.ljust(width) if i < left else cell.rjust(width)
                         for i, (cell, width) in enumerate(zip(cells, widths, strict=True))).rstrip()

    return [line(row) for row in rows]


def packed(items: list[str], width: int, indent: str = "  ") -> list[str]:
    """Items (``name value`` pairs) one space apart, in lines of at most `width` that start with `indent`; an item
    is never split (one wider than `width` gets a line of its own)."""
    lines = []
    current = indent
    for item in items:
        if len(current) > len(indent) and len(current) + 1 + len(item) > width:
            lines.append(current)
            current = indent
        current += item if len(current) == len(indent) else " " + item
    return [*lines, current]


def _table(result: CompareResult) -> list[str]:
    headers = ["output", *(name for name, _ in _cells(result, result.outputs[0]))] if result.outputs else ["output"]
    rows = [[output.name, *(value for _, value in _cells(result, output))] for output in result.outputs]
    return aligned([headers, *rows])


def _blocks(result: CompareResult, width: int) -> list[str]:
    lines = []
    for output in result.outputs:
        lines.append(output.name)
        lines += packed([f"{name} {value}" for name, value in _cells(result, output)], width)
    return lines


def metrics_table(result: CompareResult, width: int | None) -> list[str]:
    """The title, then the table (or, narrower than the table, one block per output); `width` None: no limit."""
    title = f"{result.samples} samples, {result.padding} padding rows left out"
    table = _table(result)
    if width is None or max(len(line) for line in table) <= width:
        return [title, *table]
    return [title, *_blocks(result, width)]
