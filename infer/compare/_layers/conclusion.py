"""What both layer-by-layer comparisons end with, the ONNX stand-in's (`infer.compare._layers.stand_in`) and an NPU
dump's (`infer.compare._npu.layers`): the rows diagnosed and the first diverging tensor marked
(`infer.compare._layers.diagnosis`), the first inf/NaN named with its cause over every output and per output
(`infer.compare._layers.nonfinite`), and the note that squares the marks with the verdict, as one
`LayerwiseResult`. Each side differs only in how it reads its tensors and makes its rows.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from infer.compare._layers.bands import LayerBands
from infer.compare._layers.diagnosis import diagnose, verdict_note
from infer.compare._layers.nonfinite import NonfiniteFinding, TensorInfo, classify, nonfinite_positions
from infer.compare._layers.tensors import GraphTensor
from infer.compare.layer_result import LayerRow, LayerwiseResult
from infer.compare.result import CompareResult
from infer.contract import ModelContract


def conclude(contract: ModelContract, tensors: Sequence[GraphTensor], golden: dict[str, np.ndarray],
             rows: Sequence[LayerRow], compared: dict[str, np.ndarray], *, stem: str, batch_reason: str,
             outcome: CompareResult | None, bands: LayerBands | None, band_note: str, npu_dump: str = "",
             fed_from_dump: tuple[str, ...] = ()) -> LayerwiseResult:
    """The result of one batch's comparison: `rows` (one per float tensor, in graph order) diagnosed against
    `bands` (None: msit's limits); `compared` holds each compared tensor's converted values in TF's layout, `golden`
    TF's. `outcome`: the verdict on the outputs, which the mark must agree with. `npu_dump`, `fed_from_dump`: an NPU
    dump's folder and the random ops TensorFlow was fed from it ("" and none: the stand-in)."""
    inputs_of = {t.name: t.inputs for t in tensors}
    rows_marked, origins, growth = diagnose(rows, inputs_of, bands,
                                            outputs_fail=outcome is not None and not outcome.passed)
    first = next((r for r in rows_marked if r.diverges_here), None)
    info = {t.name: TensorInfo(t.op_type, t.inputs) for t in tensors}
    # Each output's own first inf/NaN: in a model of several outputs, another branch's cause is not this one's.
    per_output: dict[str, NonfiniteFinding] = {}
    for spec in contract.outputs:
        own = first_nonfinite(rows_marked, compared, golden, info, within=upstream(spec.name, inputs_of))
        if own is not None:
            per_output[spec.name] = own
    return LayerwiseResult(batch_stem=stem, rows=rows_marked, origins=origins, growth_tensor=growth,
                           outputs_passed=outcome.passed if outcome is not None else True,
                           note=verdict_note(first, outcome, rows_marked, stem, bands), batch_reason=batch_reason,
                           nonfinite=first_nonfinite(rows_marked, compared, golden, info),
                           nonfinite_by_output=per_output, bands=bands, band_note=band_note, npu_dump=npu_dump,
                           fed_from_dump=fed_from_dump)


def upstream(tensor: str, inputs_of: dict[str, tuple[str, ...]]) -> set[str]:
    """`tensor` and every tensor it is computed from."""
    found = {tensor}
    pending = [tensor]
    while pending:
        for name in inputs_of.get(pending.pop(), ()):
            if name not in found:
                found.add(name)
                pending.append(name)
    return found


def first_nonfinite(rows: tuple[LayerRow, ...], aligned: dict[str, np.ndarray], golden: dict[str, np.ndarray],
                    info: dict[str, TensorInfo], within: set[str] | None = None) -> NonfiniteFinding | None:
    """The first compared tensor (of `within`, default all) with inf/NaN where TF is finite, classified."""
    compared = {row.tensor for row in rows if row.matched}
    for row in rows:
        if within is not None and row.tensor not in within:
            continue
        actual = aligned.get(row.tensor)
        if actual is not None and nonfinite_positions(actual, golden[row.tensor]).any():
            return classify(row.tensor, actual, golden, info, lambda name: name in compared)
    return None
