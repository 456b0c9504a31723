"""What --layerwise found, as values: each compared tensor (`LayerRow`) and the diagnosis over them
(`LayerwiseResult`: where the converted model diverges, where the error grows most, the first inf/NaN)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from binio.document import json_float
from infer.compare._judge.metrics import Metrics
from infer.compare._layers.bands import LayerBands
from infer.compare._layers.nonfinite import NonfiniteFinding
from infer.compare.metric_names import shown
from infer.compare.thresholds import Failure


@dataclass(frozen=True)
class LayerRow:
    """One intermediate tensor in graph order: compared, or listed with why it was not."""

    tensor: str
    op_type: str
    dtype: str
    shape: tuple[int, ...]
    metrics: Metrics | None  # None when not compared
    failures: tuple[Failure, ...]
    # The mark (`infer.compare._layers.diagnosis`): where the converted model leaves TensorFlow. Against bands, where
    # the error jumps on the way to the first tensor out of its band, which may pass msit's limits; by msit's limits
    # alone, the first failing tensor whose compared upstream all passes.
    diverges_here: bool = False
    unmatched_reason: str = ""  # why it was not compared
    onnx_op: str = ""  # the ONNX op that computes the tensor of this name
    onnx_tensor: str = ""  # the unnamed ONNX tensor compared in its place, where the converter fused and renamed
    match: str = ""  # how the name was matched: "op and inputs", "values", or "op differs: ..."
    layout: str = ""  # the ONNX tensor's layout relative to TensorFlow's, from the conversion's transposes
    error_growth: float = math.nan  # its RED over the largest RED of the compared tensors it reads
    upstream_error: float = math.nan  # that largest RED upstream (0 where it reads no compared tensor)
    # The expected-error band (`infer.compare._layers.bands`): the RED its precision mode explains, its RED over that,
    # and that excess over its inputs' (where the error jumps); NaN without a band.
    band: float = math.nan
    band_excess: float = math.nan
    excess_jump: float = math.nan
    random_source: str = ""  # the random op it is computed from (never compared)
    # --npu-dump: the om op whose dumped output this tensor is, its type, and the TF nodes fused into it
    npu_op: str = ""
    npu_op_type: str = ""
    fused_nodes: tuple[str, ...] = ()

    @property
    def npu_op_text(self) -> str:
        """``NPU op conv/Conv2D (Conv2D) fusing conv/Conv2D, conv/BiasAdd, relu``; "" without one."""
        if not self.npu_op:
            return ""
        fused = f" fusing {', '.join(self.fused_nodes)}" if len(self.fused_nodes) > 1 else ""
        return f"NPU op {self.npu_op} ({self.npu_op_type}){fused}"

    @property
    def matched(self) -> bool:
        return self.metrics is not None

    @property
    def passed(self) -> bool:
        return self.matched and not self.failures

    @property
    def has_band(self) -> bool:
        return not math.isnan(self.band)

    def within_band(self, factor: float) -> bool:
        """Its error is within `factor` times its band (False without a band)."""
        return self.has_band and not self.band_excess > factor

    def band_text(self, factor: float) -> str:
        """Where it stands against its band: ``past msit's limits, within its band``, ``out of its band``, or ""."""
        if not self.has_band:
            return ""
        if self.band_excess > factor:
            return "" if self.diverges_here else "out of its band"
        return "past msit's limits, within its band" if self.failures else ""

    def note(self, *, warning: bool = False, factor: float = math.inf) -> str:
        """What the numbers do not say (the terminal's table, report.csv): why it was not compared, or its mark,
        how it was matched, and its layout where the conversion did not give it. `warning`: the outputs pass;
        `factor`: how many times its band a tensor may reach."""
        if self.metrics is None:
            return f"{'skipped' if self.random_source else 'unmatched'}: {self.unmatched_reason}"
        notes = [f"first to diverge{' (warning)' if warning else ''}"] if self.diverges_here else []
        if self.diverges_here and self.has_band:
            notes[0] += (f": {self.band_excess:.3g}x its band, {self.excess_jump:.3g}x its inputs'"
                         if not math.isinf(self.band_excess) else ": inf/NaN its band does not hold")
        band = self.band_text(factor)
        if band:
            notes.append(band)
        if self.npu_op:
            notes.append(self.npu_op_text)
        if self.onnx_tensor:
            notes.append(f"as ONNX's unnamed {self.onnx_tensor} ({self.onnx_op}, fused)")
        if self.match and self.match != "op and inputs":
            notes.append(self.match if self.match.startswith(("op differs", "input dropped"))
                         else f"matched by {self.match}")
        if self.layout.startswith(("as the model gives", "unknown")) or "(the conversion does not say" in self.layout:
            notes.append(f"layout {self.layout}")
        return "; ".join(notes)

    def to_json(self) -> dict[str, Any]:
        return {"tensor": self.tensor, "op_type": self.op_type, "dtype": self.dtype, "shape": list(self.shape),
                "matched": self.matched, "diverges_here": self.diverges_here,
                "unmatched_reason": self.unmatched_reason, "onnx_op": self.onnx_op,
                "onnx_tensor": self.onnx_tensor or None, "match": self.match,
                "layout": self.layout, "error_growth": json_float(self.error_growth),
                "band": json_float(self.band), "band_excess": json_float(self.band_excess),
                "excess_jump": json_float(self.excess_jump),
                "random_source": self.random_source or None,
                **({"npu_op": self.npu_op, "npu_op_type": self.npu_op_type, "fused_nodes": list(self.fused_nodes)}
                   if self.npu_op else {}),
                "metrics": None if self.metrics is None else self.metrics.to_json(),
                "failures": [f.describe() for f in self.failures]}


ERROR_FLOOR = 1e-6  # RED of a tensor that only fp32 rounding separates from TF's


@dataclass(frozen=True)
class LayerwiseResult:
    """Every tensor of one batch, and the diagnosis: where the error is introduced, where it grows most, where
    inf/NaN first appears, and how that agrees with the verdict."""

    batch_stem: str
    rows: tuple[LayerRow, ...]
    origins: tuple[str, ...] = ()  # every failing tensor whose compared upstream all passes, in graph order
    growth_tensor: str = ""  # where the error grows most (largest error_growth)
    outputs_passed: bool = True  # the verdict on the outputs, which the marks must agree with
    note: str = ""  # the warning (a PASSED run with a diverging tensor) or why a FAILED run has no mark
    batch_reason: str = ""  # why this batch was the one compared
    nonfinite: NonfiniteFinding | None = None  # the first in graph order, over every output
    # Per output (TF name): the first inf/NaN among the tensors it is computed from, where there is one.
    nonfinite_by_output: dict[str, NonfiniteFinding] = field(default_factory=dict)
    npu_dump: str = ""  # --npu-dump: the dump folder the converted side was read from ("": the ONNX stand-in)
    fed_from_dump: tuple[str, ...] = ()  # random ops' outputs TensorFlow was fed from the dump (the NPU's draw)
    bands: LayerBands | None = None  # what judged the tensors: the expected-error band (None: msit's limits)
    band_note: str = ""  # why no band judged them, where one was asked for

    @property
    def diverges_at(self) -> LayerRow | None:
        """The marked row: the tensor where the converted model diverges (which need not fail); None without one."""
        return next((r for r in self.rows if r.diverges_here), None)

    @property
    def is_warning(self) -> bool:
        """A tensor diverges while the outputs pass: reported as a warning, not as the verdict's cause."""
        return self.outputs_passed and self.diverges_at is not None

    @property
    def factor(self) -> float:
        """How many times its band a tensor may reach (inf without bands)."""
        return self.bands.factor if self.bands is not None else math.inf

    @property
    def growth(self) -> LayerRow | None:
        return next((r for r in self.rows if r.tensor == self.growth_tensor), None) if self.growth_tensor else None

    def growth_text(self) -> str:
        """Where the error grows most, in a newcomer's words, only where it means something: that tensor is out
        of its expected band (or, without bands, past msit's limits), and is not the marked one already named.
        Elsewhere the largest growth is only where the precision's rounding first enters (the first op after
        the input, whose inputs are exact: x306 of nothing), and saying it would alarm for no reason. ""
        otherwise. The words (RED, band) are defined in docs/compare.md#words-the-verdict-uses."""
        row = self.growth
        if row is None or row.metrics is None or row.diverges_here:
            return ""
        out = row.has_band and row.band_excess > self.factor if self.bands is not None else bool(row.failures)
        if not out:
            return ""
        red = shown(row.metrics.relative_euclidean_distance)
        if row.upstream_error <= ERROR_FLOOR:
            how = "the first to differ from TensorFlow's, its inputs matching exactly"
        else:
            how = f"{row.error_growth:.3g} times that of the tensors it reads"
        return (f"the error grows most at {row.tensor} ({row.op_type}): its relative error (RED) is {red}, {how} "
                "(docs/compare.md#words-the-verdict-uses)")

    @property
    def matched(self) -> tuple[LayerRow, ...]:
        return tuple(r for r in self.rows if r.matched)

    @property
    def unmatched(self) -> tuple[LayerRow, ...]:
        return tuple(r for r in self.rows if not r.matched and not r.random_source)

    @property
    def skipped_random(self) -> tuple[LayerRow, ...]:
        return tuple(r for r in self.rows if r.random_source)

    def to_json(self) -> dict[str, Any]:
        first = self.diverges_at
        return {"batch": self.batch_stem, "batch_reason": self.batch_reason,
                "diverges_at": None if first is None else first.tensor, "divergence_is_warning": self.is_warning,
                "origins": list(self.origins), "growth_tensor": self.growth_tensor or None, "note": self.note,
                "nonfinite": None if self.nonfinite is None else self.nonfinite.to_json(),
                "nonfinite_by_output": {name: f.to_json() for name, f in self.nonfinite_by_output.items()},
                "skipped_random": [r.tensor for r in self.skipped_random],
                "judged_by": "band" if self.bands is not None else "thresholds",
                "band": None if self.bands is None else self.bands.to_json(), "band_note": self.band_note or None,
                **({"npu_dump": self.npu_dump, "fed_from_dump": list(self.fed_from_dump)} if self.npu_dump else {}),
                "tensors": [r.to_json() for r in self.rows]}
