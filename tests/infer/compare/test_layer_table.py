"""compare --layerwise's tensor table at the terminal's width: rows where they fit, blocks where not, no number
cut either way, the whole table for a pipe."""

from __future__ import annotations

import re

import numpy as np
import pytest

from infer.cli.layer_table import layer_table
from infer.compare._judge.metrics import compute_metrics
from infer.compare.layer_result import LayerRow, LayerwiseResult
from infer.compare.metric_names import shown

LONG = "encoder/layer_11/attention/self/query/BiasAdd:0"


def _layers() -> LayerwiseResult:
    golden = np.linspace(1.0, 2.0, 64)
    rng = np.random.default_rng(0)
    close = compute_metrics(golden + rng.normal(scale=1e-4, size=64), golden, atol=1e-4, rtol=1e-3)
    far = compute_metrics(golden + rng.normal(scale=0.5, size=64), golden, atol=1e-4, rtol=1e-3)
    rows = (
        LayerRow(tensor="conv/Conv2D:0", op_type="Conv2D", dtype="float32", shape=(2, 4), metrics=None, failures=(),
                 unmatched_reason="not in the ONNX model (fused or renamed by the converter)"),
        LayerRow(tensor="conv/BiasAdd:0", op_type="BiasAdd", dtype="float32", shape=(2, 4), metrics=close,
                 failures=(), onnx_op="Conv", onnx_tensor="conv/Conv2D__5:0", match="op and inputs",
                 layout="NCHW (the converter's)", error_growth=3.25),
        LayerRow(tensor=LONG, op_type="BiasAdd", dtype="float32", shape=(2, 4), metrics=far, failures=(),
                 diverges_here=True, match="op and inputs", layout="NHWC", error_growth=4512.0),
    )
    return LayerwiseResult(batch_stem="000003", rows=rows, batch_reason="the first batch where probs:0 fails",
                           outputs_passed=False)


def _numbers(layers: LayerwiseResult) -> list[str]:
    found = []
    for row in layers.rows:
        if row.metrics is not None:
            found += [shown(row.metrics.cosine_similarity, "CosineSimilarity"),
                      shown(row.metrics.relative_euclidean_distance), f"{row.error_growth:.3g}"]
    return found


@pytest.mark.parametrize(("width", "layout"), [(80, "blocks"), (120, "rows"), (None, "rows")])
def test_layer_table_fits_the_width_and_cuts_no_number(width: int | None, layout: str) -> None:
    layers = _layers()
    lines = layer_table(layers, width)
    assert lines[0].startswith("layer by layer, batch 000003 (the first batch where probs:0 fails")
    if width is not None:
        assert all(len(line) <= width for line in lines), "\n".join(lines)
    words = {word for line in lines for word in re.split(r"[\s;(),]+", line)}
    assert all(number in words for number in _numbers(layers)), "\n".join(lines)
    text = "\n".join(lines)
    assert ("\ntensor " in text) == (layout == "rows")
    if layout == "blocks":
        block = lines[lines.index(f"{LONG} (BiasAdd)"):]
        assert block[1].split() == ["cosine", _numbers(layers)[3], "RED", _numbers(layers)[4], "growth", "4.51e+03"]
        assert block[2] == "  <- first to diverge"
    else:
        row = next(line for line in lines if line.startswith(LONG))
        assert row.split()[1:5] == ["BiasAdd", *_numbers(layers)[3:6]] and row.endswith("<- first to diverge")
    if width is None:  # a pipe: one line per tensor, the note whole
        assert len(lines) == 2 + len(layers.rows)
        assert lines[2].endswith("unmatched: not in the ONNX model (fused or renamed by the converter)")
    else:  # the note wraps in its own column, or under its block, never past the width
        assert "converter)" in text and "unmatched: not in the ONNX" in text


def test_layer_table_marks_a_warning_in_a_passed_run() -> None:
    from dataclasses import replace

    lines = layer_table(replace(_layers(), outputs_passed=True), None)
    assert next(line for line in lines if line.startswith(LONG)).endswith("<- first to diverge (warning)")
