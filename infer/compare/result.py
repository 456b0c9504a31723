"""What a comparison found, as values: per output, per batch, per sample, and (with --layerwise) per tensor."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from infer.compare.metrics import Metrics, json_float
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
    """One intermediate tensor in graph order: matched and compared, or listed with why it was not."""

    tensor: str
    op_type: str
    dtype: str
    shape: tuple[int, ...]
    metrics: Metrics | None  # None when unmatched
    failures: tuple[Failure, ...]
    first_failing: bool = False
    unmatched_reason: str = ""

    @property
    def matched(self) -> bool:
        return self.metrics is not None

    def to_json(self) -> dict[str, Any]:
        return {"tensor": self.tensor, "op_type": self.op_type, "dtype": self.dtype, "shape": list(self.shape),
                "matched": self.matched, "first_failing": self.first_failing,
                "unmatched_reason": self.unmatched_reason,
                "metrics": None if self.metrics is None else self.metrics.to_json(),
                "failures": [f.describe() for f in self.failures]}


@dataclass(frozen=True)
class LayerwiseResult:
    batch_stem: str
    rows: tuple[LayerRow, ...]

    @property
    def first_failing(self) -> LayerRow | None:
        return next((r for r in self.rows if r.first_failing), None)

    @property
    def matched(self) -> tuple[LayerRow, ...]:
        return tuple(r for r in self.rows if r.matched)

    @property
    def unmatched(self) -> tuple[LayerRow, ...]:
        return tuple(r for r in self.rows if not r.matched)

    def to_json(self) -> dict[str, Any]:
        first = self.first_failing
        return {"batch": self.batch_stem, "first_failing": None if first is None else first.tensor,
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
    random_ops: dict[str, str] = field(default_factory=dict)  # node -> op: the model draws random numbers

    @property
    def failures(self) -> tuple[Failure, ...]:
        return tuple(f for o in self.outputs for f in o.failures)

    @property
    def passed(self) -> bool:
        return not self.failures

    def __bool__(self) -> bool:
        return self.passed

    def verdict(self) -> str:
        """The last line the CLI prints: ``PASSED`` or ``FAILED: <output> <metric> ...`` for each failure; for a
        model that draws random numbers, which ops, since no two samplers agree and the numbers say less."""
        verdict = "PASSED" if self.passed else "FAILED: " + "; ".join(f.describe() for f in self.failures)
        if self.random_ops:
            names = ", ".join(f"{name} ({op})" for name, op in sorted(self.random_ops.items())[:3])
            more = f" and {len(self.random_ops) - 3} more" if len(self.random_ops) > 3 else ""
            verdict += f" (the model draws random numbers: {names}{more}; TensorFlow and the converted model " \
                       "draw differently)"
        return verdict

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": "infer.compare-report", "version": 1, "passed": self.passed, "verdict": self.verdict(),
            "contract": self.contract, "dataset": self.dataset, "actual": self.actual_dir,
            "golden": self.golden_dir, "golden_source": self.golden_source, "samples": self.samples,
            "padding_excluded": self.padding, "outputs": [o.to_json() for o in self.outputs],
            "layerwise": None if self.layerwise is None else self.layerwise.to_json(),
            "dumped_golden": self.dumped_golden or None, "random_ops": dict(self.random_ops),
        }
