"""--layerwise inside multi-head attention (issue 38's BERT): the scores, the mask add and the softmax
([B,H,S,S] with S = H x D, a shape that fits more than one reading) are compared, because both sides compute the
attention's BatchMatMul in the same axes and the layouts restart there; a damage to the scores is named there."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from infer.compare._compare import CompareOptions, compare
from infer.run import run_model
from infer.run.options import RunOptions
from tests.infer.compare.corpus import edited_copy
from tests.infer.compare.layer_coverage import measure

pytestmark = pytest.mark.slow

ATTENTION = ("layer_0/MatMul_3:0", "layer_0/scores:0", "layer_0/masked:0", "layer_0/probs:0", "layer_0/MatMul_4:0",
             "layer_1/probs:0")


def test_the_attention_scores_mask_add_and_softmax_are_compared(tmp_path: Path) -> None:
    found, layers = measure("bert", tmp_path)
    assert found.passed
    rows = {row.tensor: row for row in layers.rows}
    for name in ATTENTION:
        assert rows[name].matched and rows[name].metrics is not None and not rows[name].failures, rows[name].note()
    assert not [row for row in layers.rows if "layout unknown" in row.unmatched_reason]
    assert found.compared >= 91  # before: 53 of 117


def test_a_damage_to_the_scores_is_named_at_the_scores(tmp_path: Path) -> None:
    from onnx import numpy_helper

    from infer.convert._convert import ConvertOptions, convert_model
    from tests.infer.compare.recurrent_families import family_bins, write_family

    frozen = write_family(tmp_path / "model", "bert")
    bins = family_bins(tmp_path / "bins", frozen)
    converted = convert_model(frozen, ConvertOptions(target="onnx", precision_mode="force_fp32")).contract

    def scaled_scores(model: Any) -> None:  # 1/sqrt(D) taken as 3/sqrt(D)
        node = next(n for n in model.graph.node if n.name == "layer_0/scores")
        for index, tensor in enumerate(model.graph.initializer):
            if tensor.name in node.input:
                values = numpy_helper.to_array(tensor)
                model.graph.initializer[index].CopyFrom(numpy_helper.from_array(
                    (values * 3.0).astype(values.dtype), tensor.name))

    damaged = edited_copy(converted, tmp_path / "damaged", scaled_scores)
    actual = run_model(damaged.path, bins, tmp_path / "out", RunOptions(backend="onnxrt")).folder
    result = compare(damaged.path, bins, actual, options=CompareOptions(layerwise=True),
                     cache_root=tmp_path / "golden-cache")
    assert result.layerwise is not None
    rows = {row.tensor: row for row in result.layerwise.rows}
    assert rows["layer_0/MatMul_3:0"].matched and not rows["layer_0/MatMul_3:0"].failures
    first = result.layerwise.diverges_at
    assert first is not None and first.tensor == "layer_0/scores:0", first
