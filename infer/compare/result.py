"""What a comparison found, as values: per output, per batch, per sample, and (with --layerwise) per tensor."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from infer.compare.metrics import Metrics, json_float
from infer.compare.nonfinite import NonfiniteFinding
from infer.compare.thresholds import Failure
from infer.compare.topk import TopKResult


@dataclass(frozen=True)
class BatchResult:
    stem: str
    rows: int
    metrics: Metrics
    failures: tuple[Failure, ...]

    def to_json(self) -> dict[str, Any]:
        return {"stem": self.stem, "rows": self.rows, "passed": not self.failures,
                "metrics": self.metrics.to_json(), "failures": [f.describe() for f in self.failures]}


@dataclass(frozen=True)
class SampleScore:
    """One sample of one output: how far the converted model's answer is from TensorFlow's."""

    sample: int  # index in the dataset, padding excluded
    stem: str
    row: int
    cosine_similarity: float
    max_absolute_error: float

    def to_json(self) -> dict[str, Any]:
        return {"sample": self.sample, "stem": self.stem, "row": self.row,
                "cosine_similarity": json_float(self.cosine_similarity),
                "max_absolute_error": json_float(self.max_absolute_error)}


@dataclass(frozen=True)
class PlotData:
    """What the HTML report draws, gathered while streaming: bounded in size whatever the dataset."""

    error_edges: tuple[float, ...]  # log10 |x - y| bin edges
    error_counts: tuple[int, ...]
    exact_count: int  # elements with x == y (no log)
    nonfinite_count: int  # elements whose error is NaN or inf
    scatter_golden: tuple[float, ...]
    scatter_actual: tuple[float, ...]


@dataclass(frozen=True)
class OutputResult:
    index: int
    name: str  # the TF tensor name (golden side)
    actual_dtype: str
    golden_dtype: str
    shape: tuple[int, ...]  # per batch file
    metrics: Metrics
    limits: dict[str, float]
    failures: tuple[Failure, ...]
    batches: tuple[BatchResult, ...]
    worst_samples: tuple[SampleScore, ...]
    topk: TopKResult | None
    plot: PlotData

    @property
    def passed(self) -> bool:
        return not self.failures

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index, "name": self.name, "actual_dtype": self.actual_dtype,
            "golden_dtype": self.golden_dtype, "shape": list(self.shape), "passed": self.passed,
            "metrics": self.metrics.to_json(), "limits": self.limits,
            "failures": [f.describe() for f in self.failures],
            "topk": None if self.topk is None else self.topk.to_json(),
            "worst_samples": [s.to_json() for s in self.worst_samples],
            "batches": [b.to_json() for b in self.batches],
        }


@dataclass(frozen=True)
class LayerRow:
    """One intermediate tensor in graph order: compared, or listed with why it was not."""

    tensor: str
    op_type: str
    dtype: str
    shape: tuple[int, ...]
    metrics: Metrics | None  # None when not compared
    failures: tuple[Failure, ...]
    first_failing: bool = False  # the first tensor to diverge: it fails while every compared tensor upstream passes
    unmatched_reason: str = ""  # why it was not compared
    onnx_op: str = ""  # the ONNX op that computes the tensor of this name
    onnx_tensor: str = ""  # the unnamed ONNX tensor compared in its place, where the converter fused and renamed
    match: str = ""  # how the name was matched: "op and inputs", "values", or "op differs: ..."
    layout: str = ""  # the ONNX tensor's layout relative to TensorFlow's, from the conversion's transposes
    error_growth: float = math.nan  # its RED over the largest RED of the compared tensors it reads
    random_source: str = ""  # the random op it is computed from (never compared)

    @property
    def matched(self) -> bool:
        return self.metrics is not None

    @property
    def passed(self) -> bool:
        return self.matched and not self.failures

    def to_json(self) -> dict[str, Any]:
        return {"tensor": self.tensor, "op_type": self.op_type, "dtype": self.dtype, "shape": list(self.shape),
                "matched": self.matched, "first_failing": self.first_failing,
                "unmatched_reason": self.unmatched_reason, "onnx_op": self.onnx_op,
                "onnx_tensor": self.onnx_tensor or None, "match": self.match,
                "layout": self.layout, "error_growth": json_float(self.error_growth),
                "random_source": self.random_source or None,
                "metrics": None if self.metrics is None else self.metrics.to_json(),
                "failures": [f.describe() for f in self.failures]}


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
    nonfinite: NonfiniteFinding | None = None

    @property
    def first_failing(self) -> LayerRow | None:
        return next((r for r in self.rows if r.first_failing), None)

    @property
    def is_warning(self) -> bool:
        """A tensor diverges while the outputs pass: reported as a warning, not as the verdict's cause."""
        return self.outputs_passed and self.first_failing is not None

    @property
    def growth(self) -> LayerRow | None:
        return next((r for r in self.rows if r.tensor == self.growth_tensor), None) if self.growth_tensor else None

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
        first = self.first_failing
        return {"batch": self.batch_stem, "batch_reason": self.batch_reason,
                "first_failing": None if first is None else first.tensor, "first_failing_is_warning": self.is_warning,
                "origins": list(self.origins), "growth_tensor": self.growth_tensor or None, "note": self.note,
                "nonfinite": None if self.nonfinite is None else self.nonfinite.to_json(),
                "skipped_random": [r.tensor for r in self.skipped_random],
                "tensors": [r.to_json() for r in self.rows]}


@dataclass(frozen=True)
class CompareResult:
    """The whole comparison; true when every output passed its thresholds."""

    contract: str
    dataset: str
    actual_dir: str
    golden_dir: str
    golden_source: str  # "given" | "tensorflow" | "cache"
    samples: int
    padding: int
    outputs: tuple[OutputResult, ...]
    layerwise: LayerwiseResult | None = None
    dumped_golden: str = ""  # the --dump-golden folder, when written

    @property
    def failures(self) -> tuple[Failure, ...]:
        return tuple(f for o in self.outputs for f in o.failures)

    @property
    def passed(self) -> bool:
        return not self.failures

    def __bool__(self) -> bool:
        return self.passed

    def verdict(self) -> str:
        """The last line the CLI prints: ``PASSED`` or ``FAILED: <output> <metric> ...`` for each failure."""
        if self.passed:
            return "PASSED"
        return "FAILED: " + "; ".join(f.describe() for f in self.failures)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": "infer.compare-report", "version": 1, "passed": self.passed, "verdict": self.verdict(),
            "contract": self.contract, "dataset": self.dataset, "actual": self.actual_dir,
            "golden": self.golden_dir, "golden_source": self.golden_source, "samples": self.samples,
            "padding_excluded": self.padding, "outputs": [o.to_json() for o in self.outputs],
            "layerwise": None if self.layerwise is None else self.layerwise.to_json(),
            "dumped_golden": self.dumped_golden or None,
        }
