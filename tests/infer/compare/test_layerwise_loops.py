"""--layerwise inside TF 1.x while loops (issue 38): a loop is one row saying what it holds and where it is compared
(its outputs), never one "TensorFlow could not fetch it" row per tensor inside; the loop's outputs (the LSTM's
stacked steps, the GRU's final state) are compared; rows stay in graph order around the loop."""

from __future__ import annotations

from pathlib import Path

import pytest

from infer.compare._layers.loop_rows import LOOP_OP
from tests.infer.compare.layer_coverage import measure

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(("family", "loops", "least_compared"), [("crnn", 2, 12), ("gru", 1, 4)])
def test_a_loop_is_one_row_and_its_outputs_are_compared(tmp_path: Path, family: str, loops: int,
                                                        least_compared: int) -> None:
    found, layers = measure(family, tmp_path)
    assert found.passed
    loop_rows = [row for row in layers.rows if row.op_type == LOOP_OP]
    assert len(loop_rows) == loops
    for row in loop_rows:
        assert "once per step" in row.unmatched_reason and "compared at its outputs" in row.unmatched_reason
    assert not [row for row in layers.rows if "could not fetch" in row.unmatched_reason]
    assert not [row for row in layers.rows if "/while/" in row.tensor and "Exit" not in row.op_type]
    assert found.compared >= least_compared  # before: crnn 10 of 61, gru 2 of 21


def test_the_grus_state_is_compared_after_its_loop(tmp_path: Path) -> None:
    _, layers = measure("gru", tmp_path)
    names = [row.tensor for row in layers.rows]
    state = next(row for row in layers.rows if row.tensor == "state:0")
    assert state.matched and state.metrics is not None
    # graph order: the embedding feeding the loop, the loop, its output
    assert names.index("embedded:0") < names.index("gru_1/while") < names.index("state:0") < names.index("probs:0")
