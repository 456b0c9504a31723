"""One row for each TF 1.x while loop instead of one per tensor inside it (`infer.compare._layers.tf_loops`): a
CRNN's two LSTM directions hold 44 tensors that neither side returns per step; the report says once, at the loop's
place in graph order (after its steps, before its outputs), what the loop holds and where it is compared instead
(its outputs)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from infer.compare._layers.tensors import GraphTensor
from infer.compare.layer_result import LayerRow

LOOP_OP = "while loop"


def collapse_loops(tensors: Sequence[GraphTensor], rows: Sequence[LayerRow]) -> list[LayerRow]:
    """`rows` (one per tensor of `tensors`, in the same order) with the rows of each loop's tensors replaced by one
    row naming the loop, where its last tensor was (a Merge reading the loop's start comes early in graph order;
    the loop's last step comes just before its outputs)."""
    loop_of = {t.name: t.loop for t in tensors if t.loop}
    if not loop_of:
        return list(rows)
    inside: dict[str, list[GraphTensor]] = {}
    for tensor in tensors:
        if tensor.loop:
            inside.setdefault(tensor.loop, []).append(tensor)
    outputs: dict[str, list[str]] = {}
    for tensor in tensors:
        if tensor.loop:
            continue
        for loop in dict.fromkeys(loop_of[name] for name in tensor.inputs if name in loop_of):
            outputs.setdefault(loop, []).append(tensor.name)
    last = {loop_of[row.tensor]: position for position, row in enumerate(rows) if row.tensor in loop_of}
    collapsed: list[LayerRow] = []
    for position, row in enumerate(rows):
        holder = loop_of.get(row.tensor, "")
        if not holder:
            collapsed.append(row)
        elif last[holder] == position:
            collapsed.append(_loop_row(holder, inside[holder], outputs.get(holder, [])))
    return collapsed


def _loop_row(loop: str, inside: list[GraphTensor], outputs: list[str]) -> LayerRow:
    kinds = Counter(t.op_type for t in inside if t.is_float)
    held = ", ".join(f"{kind}{f' x{count}' if count > 1 else ''}" for kind, count in kinds.most_common(6))
    more = ", ..." if len(kinds) > 6 else ""
    shown = ", ".join(outputs[:3]) + (f" and {len(outputs) - 3} more" if len(outputs) > 3 else "")
    where = f"compared at its outputs ({shown})" if outputs else "it has no output the model reads"
    reason = (f"a while loop: its {sum(kinds.values())} float tensors ({held}{more}) are computed once per step, "
              f"which neither TensorFlow nor the ONNX Loop returns; {where}")
    return LayerRow(tensor=loop, op_type=LOOP_OP, dtype="", shape=(), metrics=None, failures=(),
                    unmatched_reason=reason)
