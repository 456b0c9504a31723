"""The ops `compare --layerwise` points at, as seeds for the search: read from its public result in one place, so
that a richer layer-by-layer result (diverging tensors traced through their inputs, fp16 failure classes) changes
this function only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from binio.spec import node_name
from infer.compare.result import LayerwiseResult

MAX_LOSS_SUSPECTS = 2  # the rows where the error grew most, on top of the first failing and the inf/NaN ones


@dataclass(frozen=True)
class Suspect:
    op: str  # the TF node that makes the tensor
    tensor: str
    why: str  # first diverging | inf/NaN where TensorFlow is finite | lost most

    def to_json(self) -> dict[str, str]:
        return {"op": self.op, "tensor": self.tensor, "why": self.why}


def _error(row_metrics: object) -> float:
    cosine = getattr(row_metrics, "cosine_similarity", math.nan)
    return 1.0 if math.isnan(cosine) else max(0.0, 1.0 - cosine)


def layer_suspects(layers: LayerwiseResult) -> tuple[Suspect, ...]:
    """The first failing tensor's op, the ops where inf/NaN (where TensorFlow is finite) start (the tensor before
    them in graph order had none: what follows an inf is inf or NaN too, and says nothing more), and the failing
    ops where 1 - cosine grew most over the tensor before them; each op once, in that order."""
    found: dict[str, Suspect] = {}
    first = layers.first_failing
    if first is not None:
        found[node_name(first.tensor)] = Suspect(node_name(first.tensor), first.tensor, "first diverging")
    previous = 0.0
    previous_nonfinite = False
    growth: list[tuple[float, str, str]] = []
    for row in layers.matched:
        assert row.metrics is not None
        op = node_name(row.tensor)
        nonfinite = row.metrics.counts.nonfinite_actual_where_golden_finite > 0
        if nonfinite and not previous_nonfinite and op not in found:
            found[op] = Suspect(op, row.tensor, "inf/NaN where TensorFlow is finite")
        previous_nonfinite = nonfinite
        error = _error(row.metrics)
        if row.failures:
            growth.append((error - previous, op, row.tensor))
        previous = error
    for grew, op, tensor in sorted(growth, reverse=True)[:MAX_LOSS_SUSPECTS]:
        if grew > 0 and op not in found:
            found[op] = Suspect(op, tensor, "lost most")
    return tuple(found.values())
