"""compare --layerwise's tensor table, laid out for the width at hand like the metrics table: no number is ever cut.

One row per tensor when its name, op and numbers fit the width with room for the note, which then wraps in its
own column; otherwise one block per tensor: its name and op, its numbers packed into lines that fit, its note
wrapped below. A pipe or a log file gets the table whole, one line per tensor.
"""

from __future__ import annotations

import textwrap

from infer.cli.compare_table import aligned, packed
from infer.compare.layer_result import LayerRow, LayerwiseResult
from infer.compare.metric_names import shown

_HEADERS = ["tensor", "op", "cosine", "RED", "growth"]
_BAND_HEADERS = ["band", "x band"]  # the RED its precision explains, and its RED over that
_NOTE_MIN = 24  # narrower than this, a note column reads a word a line: blocks instead
_INDENT = "  "


def _note(row: LayerRow, layers: LayerwiseResult) -> str:
    """The row's note, its mark as an arrow, and ``fail`` on a failing tensor that is not the first (where no band
    judges it: with one, the note says where it stands against its band)."""
    note = row.note(warning=layers.is_warning, factor=layers.factor)
    if row.diverges_here:
        return f"<- {note}"
    return "; ".join(n for n in ("fail" if row.failures and not row.has_band else "", note) if n)


def _numbers(row: LayerRow, banded: bool) -> list[tuple[str, str]]:
    if row.metrics is None:
        return []
    found = [("cosine", shown(row.metrics.cosine_similarity, "CosineSimilarity")),
             ("RED", shown(row.metrics.relative_euclidean_distance)), ("growth", f"{row.error_growth:.3g}")]
    if banded:
        found += [("band", shown(row.band) if row.has_band else "-"),
                  ("x band", f"{row.band_excess:.3g}" if row.has_band else "-")]
    return found


def _wrapped(text: str, width: int, indent: str = "") -> list[str]:
    """Text in lines of at most `width` (a name longer than that is split: it is no number)."""
    return textwrap.wrap(text, width, initial_indent=indent, subsequent_indent=indent, break_on_hyphens=False) or [""]


def layer_table(layers: LayerwiseResult, width: int | None) -> list[str]:
    """The title, then one row per tensor (the note in the last column) or, narrower, one block per tensor;
    `width` None: no limit."""
    title = f"layer by layer, batch {layers.batch_stem} ({layers.batch_reason})"
    notes = [_note(row, layers) for row in layers.rows]
    banded = layers.bands is not None
    headers = _HEADERS + (_BAND_HEADERS if banded else [])
    blank = [("", "")] * (len(headers) - 2)
    cells = [[row.tensor, row.op_type, *(value for _, value in _numbers(row, banded) or blank)]
             for row in layers.rows]
    fixed = aligned([headers, *cells], left=2)
    fixed = [line.ljust(max(len(f) for f in fixed)) for line in fixed]
    column = len(fixed[0]) + 2
    if width is None:
        return [title, *(f"{line}  {note}".rstrip() for line, note in zip(fixed, ["note", *notes], strict=True))]
    if column + _NOTE_MIN <= width:
        lines = _wrapped(title, width)
        for line, note in zip(fixed, ["note", *notes], strict=True):
            wrapped = _wrapped(note, width - column) if note else [""]
            lines.append(f"{line}  {wrapped[0]}".rstrip())
            lines += [" " * column + more for more in wrapped[1:]]
        return lines
    lines = _wrapped(title, width)
    for row, note in zip(layers.rows, notes, strict=True):
        lines += _wrapped(f"{row.tensor} ({row.op_type})", width)
        numbers = _numbers(row, banded)
        if numbers:
            lines += packed([f"{name} {value}" for name, value in numbers], width, _INDENT)
        if note:
            lines += _wrapped(note, width, _INDENT)
    return lines
