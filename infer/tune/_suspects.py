"""The ops `compare --layerwise` points at, as seeds for the search: read from its public result in one place, so
that a change in the layer-by-layer diagnosis changes this function only.
"""

from __future__ import annotations

from dataclasses import dataclass

from binio.spec import node_name
from infer.compare.layer_result import LayerwiseResult


@dataclass(frozen=True)
class Suspect:
    op: str  # the TF node that makes the tensor
    tensor: str
    why: str  # first diverging | inf/NaN (its cause) | error grows most

    def to_json(self) -> dict[str, str]:
        return {"op": self.op, "tensor": self.tensor, "why": self.why}


def layer_suspects(layers: LayerwiseResult) -> tuple[Suspect, ...]:
    """Where the error enters (every failing tensor whose compared upstream passes, in graph order), where inf/NaN
    first appears (at its cause: the overflowing or underflowing tensor, which may be one the layer-by-layer
    comparison could not match), and where the error grows most; each op once, in that order."""
    found: dict[str, Suspect] = {}

    def add(tensor: str, why: str) -> None:
        op = node_name(tensor)
        if tensor and op not in found:
            found[op] = Suspect(op, tensor, why)

    for tensor in layers.origins:
        add(tensor, "first diverging")
    finding = layers.nonfinite
    if finding is not None:
        add(finding.at_tensor, f"inf/NaN: {finding.cause}")
        add(finding.tensor, "first inf/NaN")
    if layers.growth_tensor and layers.growth is not None and layers.growth.failures:
        add(layers.growth_tensor, "error grows most")
    return tuple(found.values())
