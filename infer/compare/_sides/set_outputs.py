"""Outputs that are sets: the rows a NonMaxSuppression or a TopK kept, in an order near-tied scores decide.

A detector's boxes after NMS (or any top-k) come in score order; two scores a rounding apart swap their rows, and a
healthy conversion then fails row by row (a cosine of 0.98 on the boxes) although it keeps the same detections. Such
an output is compared as a set: each sample's rows on the actual side are matched to the golden side's before any
metric runs, boxes (rows of 4) by IoU, other rows by their values, so a swap costs nothing and a box lost or moved
still leaves a row without its twin, which the metrics see. Found from the frozen graph (an output computed from a
selection's rows through ops that keep rows apart: a Gather by the kept indices, casts, reshapes, elementwise ops) or
declared by the user (`--set-output`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from binio.errors import InferError

# The ops whose outputs are rows chosen by a score, in score order.
SELECTING_OPS = frozenset({"NonMaxSuppression", "NonMaxSuppressionV2", "NonMaxSuppressionV3", "NonMaxSuppressionV4",
                           "NonMaxSuppressionV5", "NonMaxSuppressionWithOverlaps", "CombinedNonMaxSuppression",
                           "TopKV2", "TopK"})

# Ops through which each output row still comes from one selected row: followed back from an output (all data
# inputs: a Gather's indices are the selection itself). A reduction, a matmul or a sort mixes rows and stops the walk.
_ROW_KEEPING = frozenset({"Identity", "IdentityN", "Cast", "GatherV2", "Gather", "GatherNd", "ResourceGather",
                          "Reshape", "Squeeze", "ExpandDims", "Slice", "StridedSlice", "Pad", "PadV2", "ConcatV2",
                          "Concat", "Pack", "Mul", "Add", "AddV2", "Sub", "RealDiv", "Maximum", "Minimum",
                          "ClipByValue", "Sigmoid", "Relu", "Neg", "Round", "Floor", "Exp", "Select", "SelectV2",
                          "Unpack", "Split", "SplitV"})

_BOX = 4  # a row of 4 values is a box: matched by IoU
_MOST_PAIRED = 4096  # rows per sample matched pair by pair (memory: rows^2 float64s a matrix)


@dataclass(frozen=True)
class SetOutput:
    """An output compared as a set of rows (axis 0 of each sample)."""

    name: str
    source: str  # the selecting op it comes from ("NonMaxSuppressionV3 nms"), or "declared"

    def describe(self, row_width: int) -> str:
        how = "boxes matched by IoU" if row_width == _BOX else "rows matched by value"
        origin = "declared by --set-output" if self.source == "declared" else f"from {self.source}"
        return f"{self.name} compared as a set ({how}, {origin})"


def set_outputs(pb: Path, outputs: Iterable[str], declared: Iterable[str]) -> dict[str, SetOutput]:
    """Output name -> how it is a set: the `declared` names (each must be an output), and the outputs the frozen
    graph at `pb` computes from a selection's rows."""
    names = list(outputs)
    found: dict[str, SetOutput] = {}
    for name in declared:
        if name not in names:
            raise InferError(f"--set-output {name}: not an output of the model; expected one of {', '.join(names)}",
                             hint="name an output as model.json lists it (with its :0)")
        found[name] = SetOutput(name, "declared")
    if pb.is_file() and _may_select(pb):
        for name, source in _selected_outputs(pb, [n for n in names if n not in found]).items():
            found[name] = SetOutput(name, source)
    return found


def _may_select(pb: Path) -> bool:
    """Whether the pb names a selecting op at all: op types are plain bytes in the file, so a model without one
    costs no TensorFlow import."""
    data = pb.read_bytes()
    return any(op.encode() in data for op in ("NonMaxSuppression", "TopK"))


def _selected_outputs(pb: Path, outputs: list[str]) -> dict[str, str]:
    from ckpt2pb.protobuf import read_graph_def

    nodes = {node.name: node for node in read_graph_def(pb).node}
    found = {}
    for name in outputs:
        source = _selection_behind(nodes, name.split(":")[0])
        if source:
            found[name] = source
    return found


def _selection_behind(nodes: Mapping[str, Any], start: str) -> str:
    pending, seen = [start], set()
    while pending:
        name = pending.pop()
        if name in seen or name not in nodes:
            continue
        seen.add(name)
        node = nodes[name]
        if node.op in SELECTING_OPS:
            return f"{node.op} {node.name}"
        if node.op in _ROW_KEEPING:
            pending.extend(source.split(":")[0] for source in node.input if not source.startswith("^"))
    return ""


def align_rows(actual: np.ndarray, golden: np.ndarray) -> np.ndarray:
    """`actual` with its rows (axis 0) reordered to match `golden`'s: of all pairs, the closest first (boxes by
    IoU, then by their values; other rows by their values), each row used once. Rows alike on both sides keep
    their place, so an exact match is left as it is."""
    if actual.ndim == 0 or actual.shape[0] < 2 or actual.shape != golden.shape:
        return actual
    rows = actual.shape[0]
    x = np.asarray(actual, dtype=np.float64).reshape(rows, -1)
    y = np.asarray(golden, dtype=np.float64).reshape(rows, -1)
    if rows > _MOST_PAIRED:  # rows x rows pairs would not fit: both sides' rows in one canonical order instead
        source = np.empty(rows, dtype=np.int64)
        source[np.lexsort(y.T[::-1])] = np.lexsort(x.T[::-1])
        return np.asarray(actual)[source]
    # [golden row, actual row]: |y|^2 + |x|^2 - 2 y.x, so memory holds rows x rows, not rows x rows x width
    squared = (y * y).sum(axis=1)[:, None] + (x * x).sum(axis=1)[None, :] - 2.0 * (y @ x.T)
    distance = np.sqrt(np.clip(squared, 0.0, None))
    distance = np.where(np.isnan(distance), np.inf, distance)
    overlap = _iou(y, x) if x.shape[1] == _BOX else np.zeros_like(distance)
    # Most overlap first, then least distance, then the row's own place (an exact match stays where it is).
    same_place = (np.arange(rows)[:, None] != np.arange(rows)[None, :]).astype(np.float64)
    order = np.lexsort((same_place.ravel(), distance.ravel(), -overlap.ravel()))
    taken_golden = np.zeros(rows, dtype=bool)
    taken_actual = np.zeros(rows, dtype=bool)
    source = np.empty(rows, dtype=np.int64)
    for flat in order:
        g, a = divmod(int(flat), rows)
        if taken_golden[g] or taken_actual[a]:
            continue
        taken_golden[g] = taken_actual[a] = True
        source[g] = a
        if taken_golden.all():
            break
    return np.asarray(actual)[source]


def _iou(golden: np.ndarray, actual: np.ndarray) -> np.ndarray:
    """Each golden box's IoU with each actual box; corners in either order (y1, x1, y2, x2 or flipped); 0 where a
    box has no area."""
    def corners(boxes: np.ndarray) -> tuple[np.ndarray, ...]:
        return (np.minimum(boxes[:, 0], boxes[:, 2]), np.minimum(boxes[:, 1], boxes[:, 3]),
                np.maximum(boxes[:, 0], boxes[:, 2]), np.maximum(boxes[:, 1], boxes[:, 3]))

    gy1, gx1, gy2, gx2 = (c[:, None] for c in corners(golden))
    ay1, ax1, ay2, ax2 = (c[None, :] for c in corners(actual))
    inner = np.clip(np.minimum(gy2, ay2) - np.maximum(gy1, ay1), 0, None) * \
        np.clip(np.minimum(gx2, ax2) - np.maximum(gx1, ax1), 0, None)
    union = (gy2 - gy1) * (gx2 - gx1) + (ay2 - ay1) * (ax2 - ax1) - inner
    with np.errstate(divide="ignore", invalid="ignore"):
        found = np.where(union > 0, inner / union, 0.0)
    return np.nan_to_num(found, nan=0.0)
