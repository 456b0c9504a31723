"""`infer compare`: the converted model's outputs against TensorFlow's, streamed batch by batch.

Pass one reads every batch once: per-batch metrics, the dataset accumulators, per-sample scores, top-k counts and
the plot data. Pass two reads every batch again for the dataset's KullbackLeiblerDivergence, which needs the
global extremes of pass one (see `infer.compare.accumulate`). Each batch file is memory-mapped, so memory holds a
few batches, never the dataset.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from binio.errors import InferError
from binio.manifest import DatasetManifest, load_manifest
from binio.spec import TensorSpec
from infer.compare.accumulate import MetricAccumulator
from infer.compare.metrics import Metrics, as_float64
from infer.compare.result import BatchResult, CompareResult, OutputResult, PlotData, SampleScore
from infer.compare.sources import OutputPair, output_pairs, resolve_run_folder, written_specs
from infer.compare.thresholds import Thresholds
from infer.compare.topk import TopKAccumulator, is_classifier, load_labels
from infer.contract import ModelContract, load_contract

log = logging.getLogger(__name__)

ERROR_EDGES: tuple[float, ...] = tuple(float(e) for e in np.arange(-12.0, 6.0 + 1e-9, 0.25))  # log10 |x - y|


@dataclass(frozen=True)
class CompareOptions:
    thresholds: Thresholds = field(default_factory=Thresholds)
    atol: float = 1e-4
    rtol: float = 1e-3
    topk: int = 5
    labels: Path | None = None
    worst_samples: int = 10
    scatter_points: int = 4000
    workers: int = 1  # processes for the golden outputs and for the metrics, the batches split between them

    def __post_init__(self) -> None:
        """Refuses values no comparison can use, whether they came from the command line or a pipeline file."""
        if self.topk < 1:
            raise InferError(f"--topk {self.topk}: expected 1 or more")
        for name, value in (("--atol", self.atol), ("--rtol", self.rtol)):
            if not value >= 0:  # NaN too
                raise InferError(f"{name} {value}: expected 0 or more")


def batch_metrics(actual: np.ndarray, golden: np.ndarray, *, atol: float, rtol: float) -> tuple[
        MetricAccumulator, Metrics]:
    """One batch's metrics (both passes over the batch in memory) and its pass-one accumulator, to merge."""
    accumulator = MetricAccumulator(atol=atol, rtol=rtol)
    accumulator.add(actual, golden)
    accumulator.add_kl(actual, golden)
    return accumulator, accumulator.result()


def _row_scores(actual: np.ndarray, golden: np.ndarray, rows: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-sample cosine (same rules as the metric) and max |x - y|."""
    x = as_float64(actual).reshape(rows, -1)
    y = as_float64(golden).reshape(rows, -1)
    sxy, sxx, syy = (np.einsum("ij,ij->i", a, b) for a, b in ((x, y), (x, x), (y, y)))
    with np.errstate(divide="ignore", invalid="ignore"):
        cosine = np.minimum(sxy / (np.sqrt(sxx) * np.sqrt(syy)), 1.0)
    cosine[(sxx == 0) & (syy == 0)] = 1.0
    cosine[(sxx == 0) ^ (syy == 0)] = math.nan
    max_abs = np.max(np.abs(x - y), axis=1) if x.shape[1] else np.zeros(rows)
    return cosine, max_abs


class _PlotCollector:
    def __init__(self, points_per_batch: int) -> None:
        self.points_per_batch = max(1, points_per_batch)
        self.counts = np.zeros(len(ERROR_EDGES) - 1, dtype=np.int64)
        self.exact = 0
        self.nonfinite = 0
        self.golden: list[np.ndarray] = []
        self.actual: list[np.ndarray] = []

    def add(self, actual: np.ndarray, golden: np.ndarray) -> None:
        x, y = as_float64(actual), as_float64(golden)
        error = np.abs(x - y)
        finite = np.isfinite(error)
        self.nonfinite += int(np.count_nonzero(~finite))
        positive = error[finite & (error > 0)]
        self.exact += int(np.count_nonzero(finite)) - int(positive.size)
        logs = np.clip(np.log10(positive), ERROR_EDGES[0], ERROR_EDGES[-1])
        self.counts += np.histogram(logs, bins=ERROR_EDGES)[0]
        if x.size:
            picks = np.linspace(0, x.size - 1, min(self.points_per_batch, x.size)).astype(np.int64)
            self.golden.append(y[picks])
            self.actual.append(x[picks])

    def result(self) -> PlotData:
        golden = np.concatenate(self.golden) if self.golden else np.zeros(0)
        actual = np.concatenate(self.actual) if self.actual else np.zeros(0)
        return PlotData(error_edges=ERROR_EDGES, error_counts=tuple(int(c) for c in self.counts),
                        exact_count=self.exact, nonfinite_count=self.nonfinite,
                        scatter_golden=tuple(float(v) for v in golden),
                        scatter_actual=tuple(float(v) for v in actual))


def compare_output(pair: OutputPair, thresholds: Thresholds, options: CompareOptions,
                   labels: np.ndarray | None) -> OutputResult:
    """One output over the whole dataset, in two streaming passes."""
    with np.errstate(all="ignore"):  # NaN and inf in outputs are counted and reported, not warned about
        return _compare_output(pair, thresholds, options, labels)


def _compare_output(pair: OutputPair, thresholds: Thresholds, options: CompareOptions,
                    labels: np.ndarray | None) -> OutputResult:
    dataset = MetricAccumulator(atol=options.atol, rtol=options.rtol)
    batches: list[BatchResult] = []
    cosines: list[np.ndarray] = []
    max_abs: list[np.ndarray] = []
    where: list[tuple[str, int, int]] = []  # (stem, first sample, rows) per batch, for the sample index
    shape = pair.golden_spec.static_shape()
    topk = None
    if pair.batch_major and is_classifier(shape, pair.golden_spec.dt.is_float):
        topk = TopKAccumulator(options.topk, shape[1], with_labels=labels is not None)
    plot = _PlotCollector(options.scatter_points // max(1, pair.manifest.file_count))
    limits = thresholds.limits(pair.name)
    for batch in pair.batches():
        # Each side widened to float64 once per batch; every consumer below takes these flat arrays.
        x, y = as_float64(batch.actual), as_float64(batch.golden)
        accumulator, metrics = batch_metrics(x, y, atol=options.atol, rtol=options.rtol)
        dataset.merge(accumulator)
        batches.append(BatchResult(stem=batch.stem, rows=batch.rows, metrics=metrics,
                                   failures=thresholds.failures(pair.name, metrics)))
        rows = batch.rows if pair.batch_major else 1
        cosine, worst = _row_scores(x, y, rows)
        cosines.append(cosine)
        max_abs.append(worst)
        where.append((batch.stem, batch.first_sample, rows))
        if topk is not None:
            topk.add(x.reshape(batch.rows, -1), y.reshape(batch.rows, -1),
                     None if labels is None else labels[batch.first_sample:batch.first_sample + batch.rows])
        plot.add(x, y)
    for batch in pair.batches():
        dataset.add_kl(batch.actual, batch.golden)
    metrics = dataset.result()
    return OutputResult(
        index=pair.index, name=pair.name, actual_dtype=pair.actual_spec.dtype, golden_dtype=pair.golden_spec.dtype,
        shape=shape, metrics=metrics, limits=limits, failures=thresholds.failures(pair.name, metrics),
        batches=tuple(batches), worst_samples=_worst(cosines, max_abs, where, options.worst_samples),
        topk=None if topk is None else topk.result(), plot=plot.result(),
    )


def _worst(cosines: list[np.ndarray], max_abs: list[np.ndarray], where: list[tuple[str, int, int]],
           count: int) -> tuple[SampleScore, ...]:
    """The samples with the lowest cosine (NaN first), ties broken by the larger max |x - y|."""
    if not cosines:
        return ()
    cosine, worst_abs = np.concatenate(cosines), np.concatenate(max_abs)
    stems = [stem for stem, _, rows in where for _ in range(rows)]
    rows_in_batch = [row for _, _, rows in where for row in range(rows)]
    samples = [first + row for _, first, rows in where for row in range(rows)]
    key_cosine = np.where(np.isnan(cosine), -np.inf, cosine)
    key_abs = np.where(np.isnan(worst_abs), np.inf, worst_abs)
    order = np.lexsort((-key_abs, key_cosine))[:count]
    return tuple(SampleScore(sample=samples[i], stem=stems[i], row=rows_in_batch[i],
                             cosine_similarity=float(cosine[i]), max_absolute_error=float(worst_abs[i]))
                 for i in order)


def dataset_labels(path: Path | None, manifest: DatasetManifest, outputs: Sequence[TensorSpec]) -> np.ndarray | None:
    """The labels file's classes, one per sample of the dataset (padding excluded), each a class index of the
    model's classifier outputs (0-based); None without a file."""
    if path is None:
        return None
    labels = load_labels(path)
    if labels.size != manifest.samples:
        raise InferError(f"{path}: {labels.size} labels for a dataset of {manifest.samples} samples",
                         hint="one label per sample, padding excluded, in the dataset's order")
    classifiers = {spec.name: spec.shape[1] for spec in outputs
                   if len(spec.shape) == 2 and spec.shape[0] in (None, manifest.batch) and spec.shape[1] is not None
                   and is_classifier((manifest.batch, spec.shape[1]), spec.dt.is_float)}
    if classifiers:
        name = max(classifiers, key=lambda n: classifiers[n] or 0)
        classes = classifiers[name] or 0
        outside = np.flatnonzero((labels < 0) | (labels >= classes))
        if outside.size:
            sample = int(outside[0])
            raise InferError(f"{path}: label {int(labels[sample])} of sample {sample} is not a class of {name} "
                             f"(0 to {classes - 1})", hint="labels are 0-based class indices")
    return labels


def compare_run_folders(contract: ModelContract, manifest: DatasetManifest, actual_dir: Path, golden_dir: Path,
                        options: CompareOptions, *, golden_source: str = "given") -> CompareResult:
    """Both sides already on disk in msame's layout: the converted model's outputs and TensorFlow's."""
    actual_dir = resolve_run_folder(actual_dir, what="--actual")
    golden_dir = resolve_run_folder(golden_dir, what="--golden")
    pairs = output_pairs(written_specs(actual_dir, contract.model_outputs, manifest, what="--actual"),
                         written_specs(golden_dir, contract.outputs, manifest, what="--golden"), actual_dir,
                         golden_dir, manifest)
    thresholds = options.thresholds
    thresholds.check_outputs([p.name for p in pairs])
    labels = dataset_labels(options.labels, manifest, contract.outputs)
    if options.workers > 1 and manifest.file_count > 1:
        from infer.compare.parallel import compare_outputs_in_workers

        outputs = compare_outputs_in_workers(pairs, thresholds, options, labels)
    else:
        outputs = tuple(compare_output(pair, thresholds, options, labels) for pair in pairs)
    return CompareResult(
        contract=str(contract.path), dataset=str(manifest.root), actual_dir=str(actual_dir),
        golden_dir=str(golden_dir), golden_source=golden_source, samples=manifest.samples,
        padding=manifest.padding, outputs=outputs,
    )


def compare(contract_path: Path, dataset: Path, actual: Path, *, golden: Path | None = None,
            options: CompareOptions | None = None, layerwise: bool = False, dump_golden: Path | None = None,
            cache_root: Path | None = None, on_golden_run: Callable[[], None] | None = None) -> CompareResult:
    """The whole command: find or make the golden outputs, compare, and (optionally) go layer by layer.
    `on_golden_run` hears when TensorFlow is about to compute the golden outputs (not when they are cached)."""
    options = options or CompareOptions()
    if dump_golden is not None:
        from infer.compare.reports import check_output_folder

        check_output_folder(dump_golden, "--dump-golden")
    contract = load_contract(contract_path)
    manifest = load_manifest(dataset)
    if golden is not None:
        golden_dir, source = Path(golden), "given"
    else:
        from infer.compare.golden import tensorflow_golden

        # What the user named is checked before TensorFlow runs (seconds to minutes) rather than after it.
        resolve_run_folder(actual, what="--actual")
        options.thresholds.check_outputs([s.name for s in contract.outputs])
        dataset_labels(options.labels, manifest, contract.outputs)
        golden_dir, source = tensorflow_golden(contract, manifest, cache_root=cache_root, on_run=on_golden_run,
                                               workers=options.workers)
    result = compare_run_folders(contract, manifest, actual, golden_dir, options, golden_source=source)
    if layerwise or dump_golden is not None:
        from infer.compare.layerwise import compare_layers

        layers = compare_layers(contract, manifest, options.thresholds, atol=options.atol, rtol=options.rtol,
                                with_converted=layerwise, dump_golden=dump_golden)
        result = replace(result, layerwise=layers if layerwise else None,
                         dumped_golden=str(dump_golden) if dump_golden is not None else "")
    return result
