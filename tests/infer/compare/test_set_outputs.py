"""Outputs that are sets (issue 38): a detector's boxes after NMS, a top-k. Rows swapped between near-tied scores
match as a set and pass, saying so; a box lost still fails; a user can declare a set output, and a name that is no
output is one error."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from binio.binfile import read_bin, write_bin
from binio.errors import InferError
from infer.compare._compare import CompareOptions, CompareResult, compare
from infer.compare._sides.set_outputs import align_rows, set_outputs
from infer.contract import ModelContract
from infer.run import run_model
from infer.run.layout import output_file_name
from infer.run.options import RunOptions
from tests.builders.bins import write_bins
from tests.builders.frozen import write_frozen
from tests.infer.compare.detector_graphs import build_detector, build_topk

pytestmark = pytest.mark.slow

DETECTOR_OUTPUTS = ("det_boxes:0", "det_scores:0", "boxes:0")


def _converted(folder: Path) -> tuple[ModelContract, Path, Path]:
    from infer.convert._convert import ConvertOptions, convert_model

    frozen = write_frozen(folder / "model", build_detector, ("x:0",), DETECTOR_OUTPUTS)
    contract = convert_model(frozen, ConvertOptions(target="onnx", precision_mode="force_fp32")).contract
    bins = write_bins(folder / "bins", "x:0", (1, 24, 5))
    actual = run_model(contract.path, bins, folder / "out", RunOptions(backend="onnxrt")).folder
    return contract, bins, actual


def _edit(actual: Path, contract: ModelContract, output: int, change: object) -> tuple[np.ndarray, np.ndarray]:
    """Output `output` of the first batch changed by `change(values)` in place; (before, after)."""
    spec = contract.model_outputs[output]
    path = actual / output_file_name("000000", output)
    before = np.array(read_bin(path, spec)).reshape(spec.static_shape())
    after = change(before.copy())  # type: ignore[operator]
    write_bin(path, after.astype(before.dtype))
    return before, after


def _compare(contract: ModelContract, bins: Path, actual: Path, folder: Path, **options: object) -> CompareResult:
    return compare(contract.path, bins, actual, options=CompareOptions(**options),  # type: ignore[arg-type]
                   cache_root=folder / "golden-cache")


def _swapped(values: np.ndarray) -> np.ndarray:
    values[0, [0, 1, 2, 3]] = values[0, [1, 0, 3, 2]]  # two near-tie swaps
    return values


def test_boxes_swapped_between_near_ties_pass_as_a_set(tmp_path: Path) -> None:
    contract, bins, actual = _converted(tmp_path)
    before, after = _edit(actual, contract, 0, _swapped)
    _edit(actual, contract, 1, _swapped)
    # element by element the swap is a failure: msit's RED limit is 0.05
    assert np.sqrt(((after - before) ** 2).sum() / (before ** 2).sum()) > 0.05
    result = _compare(contract, bins, actual, tmp_path)
    assert result.passed, result.verdict()
    boxes, scores, every = result.outputs
    assert boxes.compared_as == "det_boxes:0 compared as a set (boxes matched by IoU, from NonMaxSuppressionV4 nms)"
    assert scores.compared_as.startswith("det_scores:0 compared as a set (rows matched by value")
    assert every.compared_as == ""  # every box before NMS is no set
    assert boxes.metrics.cosine_similarity > 0.9999
    assert "det_boxes:0 compared as a set" in result.verdict_line()
    assert result.to_json()["outputs"][0]["compared_as"] == boxes.compared_as


def test_a_box_lost_still_fails(tmp_path: Path) -> None:
    contract, bins, actual = _converted(tmp_path)
    every = np.array(read_bin(actual / output_file_name("000000", 2), contract.model_outputs[2])).reshape(1, -1, 4)

    def lost(values: np.ndarray) -> np.ndarray:
        kept = {tuple(row) for row in values[0]}
        values[0, 2] = next(row for row in every[0] if tuple(row) not in kept)  # another box in its place
        return _swapped(values)

    _edit(actual, contract, 0, lost)
    result = _compare(contract, bins, actual, tmp_path)
    assert not result.passed
    assert [f.output for f in result.failures] and {f.output for f in result.failures} == {"det_boxes:0"}


def test_topk_values_are_a_set_and_a_declared_output_is_one_too(tmp_path: Path) -> None:
    frozen = write_frozen(tmp_path / "model", build_topk, ("x:0",), ("top_values:0", "top_positions:0"))
    found = set_outputs(frozen.pb_path, ("top_values:0", "top_positions:0"), ())
    assert {name: s.source for name, s in found.items()} == {"top_values:0": "TopKV2 top",
                                                            "top_positions:0": "TopKV2 top"}
    detector = write_frozen(tmp_path / "detector", build_detector, ("x:0",), DETECTOR_OUTPUTS)
    declared = set_outputs(detector.pb_path, DETECTOR_OUTPUTS, ("boxes:0",))
    assert declared["boxes:0"].source == "declared"
    assert declared["boxes:0"].describe(4) == "boxes:0 compared as a set (boxes matched by IoU, declared by " \
                                              "--set-output)"
    with pytest.raises(InferError, match=r"--set-output box:0: not an output of the model; expected one of "
                                         r"det_boxes:0, det_scores:0, boxes:0"):
        set_outputs(detector.pb_path, DETECTOR_OUTPUTS, ("box:0",))


def test_rows_are_matched_closest_first_and_an_exact_match_stays() -> None:
    golden = np.array([[0.1, 0.1, 0.5, 0.5], [0.11, 0.1, 0.5, 0.5], [0.6, 0.6, 0.9, 0.9], [0, 0, 0, 0]])
    assert np.array_equal(align_rows(golden, golden), golden)
    swapped = golden[[2, 0, 3, 1]]
    assert np.array_equal(align_rows(swapped, golden), golden)
    moved = swapped.copy()
    moved[0] = [0.2, 0.2, 0.3, 0.3]  # the third box lost: its row stays unmatched, not hidden
    aligned = align_rows(moved, golden)
    assert np.array_equal(aligned[[0, 1, 3]], golden[[0, 1, 3]]) and not np.array_equal(aligned[2], golden[2])
    scores = np.array([0.9, 0.8000001, 0.8, 0.1])
    assert np.array_equal(align_rows(scores[[0, 2, 1, 3]], scores), scores)
