""""error grows most at X (x306)" is said only where it means something: on a healthy conversion the largest growth
is where fp16's rounding first enters (the first op after the exact input: 306 times nothing), and naming it
alarmed for no reason. Said, it is in a newcomer's words and points at where the words are defined."""

from __future__ import annotations

import numpy as np

from infer.compare._judge.metrics import compute_metrics
from infer.compare._layers.bands import LayerBands
from infer.compare.layer_result import LayerRow, LayerwiseResult

BANDS = LayerBands(precision_mode="force_fp16", factor=10.0, emulated="emulated/model.json")


def _row(tensor: str, red: float, *, growth: float, upstream: float, band: float = 1e-3,
         marked: bool = False) -> LayerRow:
    golden = np.linspace(1.0, 2.0, 64)
    actual = golden * (1 + red)  # RED = red, exactly enough
    metrics = compute_metrics(actual, golden, atol=1e-5, rtol=1e-3)
    return LayerRow(tensor=tensor, op_type="Conv2D", dtype="float32", shape=(64,), metrics=metrics, failures=(),
                    diverges_here=marked, error_growth=growth, upstream_error=upstream, band=band,
                    band_excess=red / band, excess_jump=1.0)


def test_growth_within_its_band_is_not_said() -> None:
    """The first conv of a healthy fp16 conversion: RED 3e-4 over exact inputs, growth 306, within its band."""
    rows = (_row("conv1:0", 3.06e-4, growth=306.0, upstream=0.0),)
    layers = LayerwiseResult(batch_stem="000000", rows=rows, growth_tensor="conv1:0", bands=BANDS)
    assert layers.growth_text() == ""


def test_growth_out_of_its_band_is_said_in_words_with_the_definitions() -> None:
    rows = (_row("conv1:0", 3e-4, growth=300.0, upstream=0.0),
            _row("conv2:0", 0.09, growth=300.0, upstream=3e-4, marked=False))
    layers = LayerwiseResult(batch_stem="000000", rows=rows, growth_tensor="conv2:0", bands=BANDS)
    text = layers.growth_text()
    assert text.startswith("the error grows most at conv2:0 (Conv2D): its relative error (RED) is 0.09")
    assert "300 times that of the tensors it reads" in text
    assert text.endswith("(docs/compare.md#words-the-verdict-uses)")


def test_the_marked_tensor_is_not_named_twice() -> None:
    rows = (_row("conv2:0", 0.09, growth=300.0, upstream=3e-4, marked=True),)
    layers = LayerwiseResult(batch_stem="000000", rows=rows, growth_tensor="conv2:0", bands=BANDS)
    assert layers.growth_text() == ""
