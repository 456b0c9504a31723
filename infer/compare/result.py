"""What a comparison found, as values: per output, per batch and per sample (per tensor, with --layerwise:
`infer.compare.layer_result`)."""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, overload

from binio.document import json_float
from binio.json_pieces import StreamedList, plain
from binio.positions import position, positions
from infer.compare._judge.aipp_check import AippCheck
from infer.compare._judge.constant_outputs import ConstantOutput
from infer.compare._judge.expected import ExpectedError
from infer.compare._judge.fp16_trouble import CAUSE as FP16_CAUSE
from infer.compare._judge.fp16_trouble import DOCS as FP16_DOCS
from infer.compare._judge.fp16_trouble import Fp16Trouble
from infer.compare._judge.kl_band import KlBand
from infer.compare._judge.metrics import Metrics, MetricsColumns
from infer.compare._judge.topk import TopKResult
from infer.compare._sides.provenance import Provenance
from infer.compare.layer_result import LayerwiseResult
from infer.compare.metric_names import shown
from infer.compare.thresholds import Failure, Thresholds

if TYPE_CHECKING:
    import numpy as np

REPORT_SCHEMA = "infer.compare-report"
# Raised when a key changes meaning or goes away (docs/json-output.md). 2: layerwise's `first_failing` and
# `first_failing_is_warning`, and each tensor's `first_failing`, are `diverges_at`, `divergence_is_warning` and
# `diverges_here` (the marked tensor need not fail).
REPORT_VERSION = 2


@dataclass(frozen=True, slots=True)  # one per batch: no __dict__
class BatchResult:
    stem: str
    rows: int
    metrics: Metrics
    failures: tuple[Failure, ...]

    def to_json(self) -> dict[str, Any]:
        return {"stem": self.stem, "rows": self.rows, "passed": not self.failures,
                "metrics": self.metrics.to_json(), "failures": [f.describe() for f in self.failures]}


class BatchResults(Sequence[BatchResult]):
    """Every batch of one output, in dataset order, held as columns: the stems, the real rows and the metrics'
    numbers (`MetricsColumns`); each `BatchResult` is made when asked for, its failures judged then by the
    output's thresholds. At batch 1 a validation set is 50,000 batches: a batch costs its numbers here, not a
    `BatchResult`, a `Metrics`, its counts and its failures (issue 42: compare's memory flat in the batches)."""

    __slots__ = ("_metrics", "_output", "_rows", "_stems", "_thresholds")

    def __init__(self, stems: Sequence[str], rows: array[int], metrics: MetricsColumns, *, output: str,
                 thresholds: Thresholds) -> None:
        if not len(stems) == len(rows) == len(metrics):
            raise ValueError(f"{len(stems)} stems, {len(rows)} row counts and {len(metrics)} metrics rows")
        self._stems, self._rows, self._metrics = stems, rows, metrics
        self._output, self._thresholds = output, thresholds

    def __len__(self) -> int:
        return len(self._stems)

    @overload
    def __getitem__(self, index: int) -> BatchResult: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[BatchResult, ...]: ...

    def __getitem__(self, index: int | slice) -> BatchResult | tuple[BatchResult, ...]:
        if isinstance(index, slice):
            return tuple(self[i] for i in positions(index, len(self)))
        index = position(index, len(self))
        metrics = self._metrics[index]
        return BatchResult(stem=self._stems[index], rows=self._rows[index], metrics=metrics,
                           failures=self._thresholds.failures(self._output, metrics))

    def __iter__(self) -> Iterator[BatchResult]:
        return (self[i] for i in range(len(self)))

    def metric_values(self, name: str) -> np.ndarray:
        """One float metric of every batch (``cosine_similarity``), in order, read from its column: no
        `BatchResult` made (the HTML report's per-batch plot reads 50,000 of them at batch 1)."""
        return self._metrics.values(name)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, BatchResults):
            return (tuple(self._stems) == tuple(other._stems) and self._rows == other._rows
                    and self._metrics == other._metrics and self._output == other._output
                    and self._thresholds == other._thresholds)
        if isinstance(other, tuple):
            return tuple(self) == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # compared by value, as the tuple it stands for; not hashed

    def __repr__(self) -> str:
        return f"BatchResults({len(self)} batches of {self._output})"


@dataclass(frozen=True)
class SampleScore:
    """One sample of one output: how far the converted model's answer is from TensorFlow's."""

    sample: int  # index in the dataset, padding excluded
    stem: str
    row: int
    source: str  # the file the sample was made from (an image, a bare bin), else ``source[index]``
    cosine_similarity: float
    max_absolute_error: float
    root_mean_square_error: float = math.nan
    relative_euclidean_distance: float = math.nan

    def to_json(self) -> dict[str, Any]:
        return {"sample": self.sample, "stem": self.stem, "row": self.row, "source": self.source,
                "cosine_similarity": json_float(self.cosine_similarity),
                "max_absolute_error": json_float(self.max_absolute_error),
                "root_mean_square_error": json_float(self.root_mean_square_error),
                "relative_euclidean_distance": json_float(self.relative_euclidean_distance)}


@dataclass(frozen=True)
class PlotData:
    """What the HTML report draws, gathered while streaming: bounded in size whatever the dataset."""

    error_edges: tuple[float, ...]  # log10 |x - y| bin edges
    error_counts: tuple[int, ...]
    exact_count: int  # elements with |x - y| below 1e-12, zero included (no log)
    nonfinite_count: int  # elements whose error is NaN or inf
    scatter_golden: tuple[float, ...]
    scatter_actual: tuple[float, ...]

    def filled_range(self) -> tuple[int, int] | None:
        """The first and one past the last histogram bin holding an element; None when every error is exact or
        not finite."""
        filled = [i for i, count in enumerate(self.error_counts) if count]
        return (filled[0], filled[-1] + 1) if filled else None


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
    batches: Sequence[BatchResult]  # BatchResults from a measure: columns, each batch made when read
    worst_samples: tuple[SampleScore, ...]  # worst first, by CosineSimilarity (ties: the larger max |x - y|)
    topk: TopKResult | None
    plot: PlotData
    sample_limits: dict[str, float] = field(default_factory=dict)  # each sample's limits on its own
    failing_samples: tuple[int, ...] = ()  # samples that break a limit of sample_limits, in dataset order
    worst_failing: Failure | None = None  # the worst of them, and the first limit it breaks
    kl_band: KlBand | None = None  # KL on a near-uniform distribution, judged against its band (kl_band.py)
    compared_as: str = ""  # how, where not element by element: "det_boxes:0 compared as a set (boxes matched...)"

    @property
    def passed(self) -> bool:
        return not self.failures

    def to_json(self) -> dict[str, Any]:
        return plain(self.document())

    def document(self) -> dict[str, Any]:
        """`to_json` with its batches as a `StreamedList`: each batch's entry is made while report.json is written
        (at batch 1, 50,000 of them built at once were 1.3 KB a batch at compare's peak)."""
        return {
            "index": self.index, "name": self.name, "actual_dtype": self.actual_dtype,
            "golden_dtype": self.golden_dtype, "shape": list(self.shape), "passed": self.passed,
            "metrics": self.metrics.to_json(), "limits": self.limits,
            "failures": [f.describe() for f in self.failures],
            "topk": None if self.topk is None else self.topk.to_json(),
            "sample_limits": self.sample_limits, "failing_samples": list(self.failing_samples),
            "worst_failing_sample": None if self.worst_failing is None else self.worst_failing.describe(),
            "compared_as": self.compared_as or None,
            "worst_samples": [s.to_json() for s in self.worst_samples],
            "batches": StreamedList(lambda: (b.to_json() for b in self.batches)),
            "kl_band": None if self.kl_band is None else self.kl_band.to_json(),
        }


def fp16_cause(output: OutputResult, layers: LayerwiseResult | None,
               troubles: tuple[Fp16Trouble, ...] = ()) -> str:
    """The fp16 column of the terminal table and the HTML report: ``ok``; ``overflow`` where TF's own values are
    past 65504; otherwise, for inf/NaN where TF is finite, the cause --layerwise found among the tensors this output
    is computed from (overflow, underflow, NaN from inf), or ``inf/NaN`` without it; and where the output is finite
    but --layerwise found inf/NaN among those tensors (x / sqrt(sum(x*x)) with the sum past 65504 gives 0s, not
    inf), that cause, ``inside``. Without --layerwise, what the outputs alone show (`troubles`): ``overflow`` for
    values saturated at ±65504, ``over/underflow`` for an output collapsed under fp16."""
    counts = output.metrics.counts
    finding = layers.nonfinite_by_output.get(output.name) if layers is not None else None
    if finding is not None:
        return finding.cause if counts.nonfinite_actual_where_golden_finite else f"{finding.cause} inside"
    if counts.beyond_fp16_golden:
        return "overflow"  # TF's own values are past 65504: fp16 cannot hold them
    trouble = next((t for t in troubles if t.output == output.name), None)
    if trouble is not None:
        return trouble.evidence
    return "inf/NaN" if counts.nonfinite_actual_where_golden_finite else "ok"


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
    provenance: Provenance | None = None
    per_sample_asked: bool = False  # a sample past its limits fails the run (--threshold sample:...)
    expected: tuple[ExpectedError, ...] = ()  # --expected-from-emulation: per output
    expected_asked: bool = False  # an output worse than its emulated precision explains fails the run
    preprocessing: tuple[AippCheck, ...] = ()  # a model with AIPP: its output against the declared preprocessing
    random_ops: dict[str, str] = field(default_factory=dict)  # node -> op: the model draws random numbers
    fp16_grid: tuple[str, ...] = ()  # an om's float32 outputs whose every value equals its float16 rounding
    constant_outputs: tuple[ConstantOutput, ...] = ()  # outputs the same for every sample, on a side or both
    fp16_trouble: tuple[Fp16Trouble, ...] = ()  # outputs whose values show fp16 overflow or underflow inside

    @property
    def warnings(self) -> tuple[str, ...]:
        """What makes a verdict say less than it seems to, the run failing or not: outputs that do not depend on
        the input (but not one whose collapse the fp16 trouble explains: the cause says it), and fp16 trouble
        inside a model whose outputs pass."""
        explained = {t.output for t in self.fp16_trouble}
        found = [c.describe() for c in self.constant_outputs if c.name not in explained]
        if self.passed:
            found += [f"{t.describe()}, though the outputs pass" for t in self.fp16_trouble]
        return tuple(found)

    @property
    def cause(self) -> str:
        """What the outputs alone say made the run fail (`CAUSE`: fp16 overflow or underflow inside the network),
        or ""."""
        return FP16_CAUSE if self.fp16_trouble and not self.passed else ""

    @property
    def failures(self) -> tuple[Failure, ...]:
        """The dataset-wide limits broken (msit's rule by default), output by output."""
        return tuple(f for o in self.outputs for f in o.failures)

    @property
    def fail_reasons(self) -> tuple[str, ...]:
        """Why the run fails, one text per reason: the dataset-wide limits broken, then the checks that were asked
        to fail it (per-sample limits, the expected-error band)."""
        # A mismatched AIPP config explains every output's failure after it: named first.
        found = [c.describe() for c in self.preprocessing if not c.passed]
        found += [f.describe() for f in self.failures]
        found += [reason for o in self.outputs for reason in self._sample_reasons(o)]
        found += [reason for o in self.outputs for reason in self._band_reasons(o)]
        return tuple(found)

    def _sample_reasons(self, output: OutputResult) -> list[str]:
        if not self.per_sample_asked or output.worst_failing is None:
            return []
        return [f"{output.worst_failing.describe()} ({self.failing_count(output)})"]

    def _band_reasons(self, output: OutputResult) -> list[str]:
        if not self.expected_asked:
            return []
        return [e.describe() for e in self.expected if e.output == output.name and e.flagged]

    def asked_reasons(self, output: OutputResult) -> tuple[str, ...]:
        """Why the checks asked to fail the run (a sample past its limits, the expected band) fail this output."""
        return (*self._sample_reasons(output), *self._band_reasons(output))

    def output_passed(self, output: OutputResult) -> bool:
        """The output's verdict as the run's: its dataset-wide limits, and the checks asked to fail the run (a
        sample past its limits, an error past the expected band). The tables' result column says this."""
        return not output.failures and not self.asked_reasons(output)

    def failing_count(self, output: OutputResult) -> str:
        return self._failing_text(len(output.failing_samples))

    def _failing_text(self, count: int) -> str:
        return f"{count} of {self.samples} sample{'s' if self.samples != 1 else ''} fail on their own"

    @property
    def passed(self) -> bool:
        return not self.fail_reasons

    def __bool__(self) -> bool:
        return self.passed

    @property
    def flagged(self) -> tuple[ExpectedError, ...]:
        """The outputs past their expected band (whether or not that fails the run)."""
        return tuple(e for e in self.expected if e.flagged)

    def verdict(self) -> str:
        """``PASSED``, or ``FAILED: <output> <metric> <value> <relation> <limit>; ...`` for each reason. The band,
        msit's second opinion, says so: ``PASSED by msit's thresholds, but probs:0 is 37x its expected band
        (...)`` where it is not asked to fail the run, ``FAILED by the expected band (msit's thresholds pass):
        ...`` where it alone fails it."""
        if self.passed:
            if self.flagged:
                return ("PASSED by msit's thresholds, but " + "; ".join(e.describe() for e in self.flagged)
                        + " (--fail-on-expected fails the run on it)")
            return "PASSED"
        return self._failed_by() + "; ".join(self.fail_reasons)

    def _failed_by(self) -> str:
        """``FAILED: ``, with what failed it where that is not msit's limits alone, and the cause where named."""
        reasons = self.fail_reasons
        banded = [r for o in self.outputs for r in self._band_reasons(o)]
        by = " by the expected band (msit's thresholds pass)" if banded and len(banded) == len(reasons) else ""
        return f"FAILED{by}: " + (f"{self.cause}; " if self.cause else "")

    def headline(self) -> str:
        """The verdict in one short line, what the CLI prints first: ``PASSED``, or ``FAILED: <cause>; <the first
        reason> (and 3 more)``; the whole of it below (`details`)."""
        if self.passed:
            if self.flagged:
                return "PASSED by msit's thresholds, but " + "; ".join(
                    f"{e.output} is {_ratio_text(e.ratio)} its expected band" for e in self.flagged)
            return "PASSED"
        reasons = self.fail_reasons
        more = f" (and {len(reasons) - 1} more)" if len(reasons) > 1 else ""
        return f"{self._failed_by()}{reasons[0]}{more}"

    def details(self) -> tuple[str, ...]:
        """What the headline leaves out, one line each: every reason, the cause and what it means, the band, what
        was compared with what, and the worst sample."""
        lines = []
        reasons = self.fail_reasons
        if len(reasons) > 1:
            lines.append("limits broken: " + "; ".join(reasons))
        lines += [f"cause: {t.describe()} ({FP16_DOCS})" for t in self.fp16_trouble if not self.passed]
        if self.passed and self.flagged:
            lines += [f"{e.describe()} (--fail-on-expected fails the run on it)" for e in self.flagged]
        lines += [f"expected band: {e.summary()}" for e in self.expected]
        lines += [f"{o.name}: {o.kl_band.describe()}" for o in self.outputs if o.kl_band is not None]
        lines += self._record_parts()
        return tuple(lines)

    def _record_parts(self) -> list[str]:
        """What was compared with what, and how: the verdict line's parts after the verdict, the band left out."""
        parts = []
        if self.random_ops:  # no two samplers agree: the numbers say less about the conversion
            names = ", ".join(f"{name} ({op})" for name, op in sorted(self.random_ops.items())[:3])
            more = f" and {len(self.random_ops) - 3} more" if len(self.random_ops) > 3 else ""
            parts.append(f"the model draws random numbers: {names}{more}; TensorFlow and the converted model "
                         "draw differently")
        if self.provenance is not None:
            parts.append(self.provenance.sides())
        summary = self.sample_summary()
        if summary:
            parts.append(summary)
        if self.fp16_grid:  # the om computed in fp16, whatever dtype it wrote its outputs in
            parts.append(f"actual values on the fp16 grid: every value of {', '.join(self.fp16_grid)} equals its "
                         "float16 rounding")
        parts += [o.compared_as for o in self.outputs if o.compared_as]
        return parts

    @property
    def worst_sample(self) -> tuple[OutputResult, SampleScore] | None:
        """The worst sample over every output: the lowest cosine (NaN first), then the larger max |x - y|."""
        found = [(o, o.worst_samples[0]) for o in self.outputs if o.worst_samples]
        if not found:
            return None

        def key(item: tuple[OutputResult, SampleScore]) -> tuple[float, float]:
            score = item[1]
            cosine = -math.inf if math.isnan(score.cosine_similarity) else score.cosine_similarity
            worst = math.inf if math.isnan(score.max_absolute_error) else score.max_absolute_error
            return cosine, -worst

        return min(found, key=key)

    @property
    def samples_failing(self) -> int:
        """Samples that break a per-sample limit of any output."""
        return len({s for o in self.outputs for s in o.failing_samples})

    def sample_summary(self) -> str:
        """``worst sample 5 (img_5.png): probs:0 cosine 0.93, max |diff| 0.4; 1 of 10 samples fail on their own``."""
        worst = self.worst_sample
        if worst is None:
            return ""
        output, score = worst
        return (f"worst sample {score.sample} ({score.source}): {output.name} cosine "
                f"{shown(score.cosine_similarity, 'CosineSimilarity')}, max |diff| {shown(score.max_absolute_error)}; "
                f"{self._failing_text(self.samples_failing)}")

    def verdict_line(self) -> str:
        """The verdict on one line, for the reports and the pipeline: the verdict, then what was compared with what,
        then the samples, then the band: ``PASSED | golden: tensorflow model.pb (1a2b3c4d) | actual: onnxrt
        model.onnx force_fp16 (5e6f7a8b) | 60 samples, dataset 9c0d1e2f | worst sample 17 (img_17.png): ...``.
        The warnings are not repeated here (report.json's `warnings`)."""
        return " | ".join([self.verdict(), *self._record_parts(), *(e.summary() for e in self.expected)])

    def to_json(self) -> dict[str, Any]:
        return plain(self.document())

    def document(self) -> dict[str, Any]:
        """What report.json holds, each output's batches made only while it is written (`OutputResult.document`)."""
        return {
            "schema": REPORT_SCHEMA, "version": REPORT_VERSION, "passed": self.passed, "verdict": self.verdict(),
            "contract": self.contract, "dataset": self.dataset, "actual": self.actual_dir,
            "golden": self.golden_dir, "golden_source": self.golden_source, "samples": self.samples,
            "padding_excluded": self.padding,
            "outputs": [o.document() | {"fp16": fp16_cause(o, self.layerwise, self.fp16_trouble),
                                       "passes_run": self.output_passed(o)} for o in self.outputs],
            "layerwise": None if self.layerwise is None else self.layerwise.to_json(),
            "dumped_golden": self.dumped_golden or None, "random_ops": dict(self.random_ops),
            "actual_on_fp16_grid": list(self.fp16_grid),
            "constant_outputs": [c.to_json() for c in self.constant_outputs], "warnings": list(self.warnings),
            "verdict_line": self.verdict_line(), "headline": self.headline(), "cause": self.cause or None,
            "fp16_trouble": [t.to_json() for t in self.fp16_trouble],
            "provenance": None if self.provenance is None else self.provenance.to_json(),
            "samples_failing_on_their_own": self.samples_failing, "per_sample_fails_run": self.per_sample_asked,
            "worst_sample": None if self.worst_sample is None else {"output": self.worst_sample[0].name,
                                                                    **self.worst_sample[1].to_json()},
            "expected_from_emulation": [e.to_json() for e in self.expected] if self.expected else None,
            "expected_fails_run": self.expected_asked,
            "preprocessing": [c.to_json() for c in self.preprocessing] or None,
        }


def _ratio_text(value: float) -> str:
    return "NaN x" if math.isnan(value) else f"{value:.3g}x"
