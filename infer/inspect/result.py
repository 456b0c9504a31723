"""What `infer inspect` found (`InspectResult`): one of three readings, by what the path is."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from atc_wrap.ascend_files.om_model import OmModel
from atc_wrap.precision.plan import PrecisionPlan
from ckpt2pb.inspection import GraphReport

InspectedKind = Literal["graph", "om", "precision_plan"]


@dataclass(frozen=True)
class InspectResult:
    """Exactly one of: a model source's report (`graph`: inputs, ranked output candidates, op types), an om's own
    description (`om`: header, inputs and outputs as it stores them, AIPP, gears, fusion map), or the precision plan
    a converted model.json records (`plan`, for --precision)."""

    source: Path
    graph: GraphReport | None = None
    om: OmModel | None = None
    plan: PrecisionPlan | None = None

    def __post_init__(self) -> None:
        assert sum(found is not None for found in (self.graph, self.om, self.plan)) == 1, "one reading exactly"

    @property
    def kind(self) -> InspectedKind:
        return "graph" if self.graph is not None else "om" if self.om is not None else "precision_plan"

    def to_json(self) -> dict[str, Any]:
        """`infer inspect --json` (docs/json-output.md): the reading's own JSON."""
        if self.graph is not None:
            return self.graph.to_json()
        if self.om is not None:
            return self.om.to_json()
        assert self.plan is not None
        return self.plan.to_json()
