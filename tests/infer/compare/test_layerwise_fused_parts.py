"""--layerwise where tf2onnx drops a TF name on a tensor read beside others (issue 38's U-Net): the bilinear resize
concatenated with its skip connection is compared as the unnamed Resize output the Concat reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.infer.compare.layer_coverage import measure

pytestmark = pytest.mark.slow


def test_a_unets_resize_beside_its_skip_is_compared(tmp_path: Path) -> None:
    found, layers = measure("unet", tmp_path)
    assert found.passed
    resize = next(row for row in layers.rows if row.tensor == "up2/resize:0")
    assert resize.matched and resize.metrics is not None and not resize.failures, resize.note()
    assert "unnamed" in resize.note()
    assert found.compared >= 19  # before: 18 of 25
