"""`infer compare --workers N`: each output's batches split into N contiguous shards, measured in N processes.

The result is the one `infer.compare.compare.compare_output` gives, bit for bit, because nothing is summed in a
different order: workers return per-batch pieces (each batch's pass-one accumulator, its metrics and row scores;
for the KL pass, each batch's four partial sums computed against the dataset's extremes), and this process folds
them in dataset order exactly as the single-process loop does. Plot and top-k counts are integers; the scatter
points are concatenated in order. The per-batch work mirrors `compare._compare_output` step for step (the tests
compare the two results for equality).
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import numpy as np

from infer.compare.accumulate import MetricAccumulator
from infer.compare.compare import CompareOptions, _PlotCollector, _row_scores, _worst, batch_metrics
from infer.compare.metrics import Metrics, as_float64
from infer.compare.result import BatchResult, OutputResult
from infer.compare.sources import OutputPair
from infer.compare.thresholds import Thresholds
from infer.compare.topk import TopKAccumulator, is_classifier


@dataclass(frozen=True)
class _BatchPart:
    stem: str
    first_sample: int
    rows: int  # real samples in the batch
    score_rows: int  # rows of the per-sample scores (1 for an output that is not batch-major)
    accumulator: MetricAccumulator
    metrics: Metrics
    cosine: np.ndarray
    worst: np.ndarray


@dataclass(frozen=True)
class _ShardPart:
    batches: tuple[_BatchPart, ...]
    plot: _PlotCollector
    topk: TopKAccumulator | None


def _topk(pair: OutputPair, options: CompareOptions, labels: np.ndarray | None) -> TopKAccumulator | None:
    shape = pair.golden_spec.static_shape()
    if pair.batch_major and is_classifier(shape, pair.golden_spec.dt.is_float):
        return TopKAccumulator(options.topk, shape[1], with_labels=labels is not None)
    return None


def _pass_one(pair: OutputPair, stems: frozenset[str], options: CompareOptions,
              labels: np.ndarray | None) -> _ShardPart:
    topk = _topk(pair, options, labels)
    plot = _PlotCollector(options.scatter_points // max(1, pair.manifest.file_count))
    parts = []
    with np.errstate(all="ignore"):
        for batch in pair.batches():
            if batch.stem not in stems:
                continue
            x, y = as_float64(batch.actual), as_float64(batch.golden)
            accumulator, metrics = batch_metrics(x, y, atol=options.atol, rtol=options.rtol)
            rows = batch.rows if pair.batch_major else 1
            cosine, worst = _row_scores(x, y, rows)
            parts.append(_BatchPart(stem=batch.stem, first_sample=batch.first_sample, rows=batch.rows, score_rows=rows,
                                    accumulator=accumulator, metrics=metrics, cosine=cosine, worst=worst))
            if topk is not None:
                topk.add(x.reshape(batch.rows, -1), y.reshape(batch.rows, -1),
                         None if labels is None else labels[batch.first_sample:batch.first_sample + batch.rows])
            plot.add(x, y)
    return _ShardPart(batches=tuple(parts), plot=plot, topk=topk)


def _pass_two(pair: OutputPair, stems: frozenset[str], extremes: MetricAccumulator
              ) -> list[tuple[float, float, float, int]]:
    """Each batch's KL sums, from a fresh accumulator holding the dataset's extremes (so 0 + each sum, exact)."""
    sums = []
    with np.errstate(all="ignore"):
        for batch in pair.batches():
            if batch.stem not in stems:
                continue
            one = MetricAccumulator(atol=extremes.atol, rtol=extremes.rtol, min_x=extremes.min_x,
                                    max_x=extremes.max_x, min_y=extremes.min_y, max_y=extremes.max_y)
            one.add_kl(batch.actual, batch.golden)
            sums.append((one.kl_sum_a, one.kl_sum_b, one.kl_sum_alogab, one.kl_elements))
    return sums


def _merge_plot(parts: list[_ShardPart], points_per_batch: int) -> _PlotCollector:
    plot = _PlotCollector(points_per_batch)
    for part in parts:
        plot.counts += part.plot.counts
        plot.exact += part.plot.exact
        plot.nonfinite += part.plot.nonfinite
        plot.golden.extend(part.plot.golden)
        plot.actual.extend(part.plot.actual)
    return plot


def _merge_topk(parts: list[_ShardPart]) -> TopKAccumulator | None:
    merged = parts[0].topk
    if merged is None:
        return None
    for part in parts[1:]:
        assert part.topk is not None
        merged.samples += part.topk.samples
        merged.top1_agree += part.topk.top1_agree
        merged.overlap += part.topk.overlap
        for key, value in part.topk.correct.items():
            merged.correct[key] += value
    return merged


def _compare_output(pool: ProcessPoolExecutor, pair: OutputPair, shards: list[frozenset[str]],
                    thresholds: Thresholds, options: CompareOptions, labels: np.ndarray | None) -> OutputResult:
    parts = list(pool.map(_pass_one, [pair] * len(shards), shards, [options] * len(shards),
                          [labels] * len(shards)))
    dataset = MetricAccumulator(atol=options.atol, rtol=options.rtol)
    batches = []
    for part in (b for p in parts for b in p.batches):
        dataset.merge(part.accumulator)
        batches.append(BatchResult(stem=part.stem, rows=part.rows,
                                   metrics=part.metrics, failures=thresholds.failures(pair.name, part.metrics)))
    for shard_sums in pool.map(_pass_two, [pair] * len(shards), shards, [dataset] * len(shards)):
        for sum_a, sum_b, sum_alogab, elements in shard_sums:
            dataset.kl_sum_a += sum_a
            dataset.kl_sum_b += sum_b
            dataset.kl_sum_alogab += sum_alogab
            dataset.kl_elements += elements
    metrics = dataset.result()
    every = [b for p in parts for b in p.batches]
    topk = _merge_topk(parts)
    return OutputResult(
        index=pair.index, name=pair.name, actual_dtype=pair.actual_spec.dtype, golden_dtype=pair.golden_spec.dtype,
        shape=pair.golden_spec.static_shape(), metrics=metrics, limits=thresholds.limits(pair.name),
        failures=thresholds.failures(pair.name, metrics), batches=tuple(batches),
        worst_samples=_worst([b.cosine for b in every], [b.worst for b in every],
                             [(b.stem, b.first_sample, b.score_rows) for b in every], options.worst_samples),
        topk=None if topk is None else topk.result(),
        plot=_merge_plot(parts, options.scatter_points // max(1, pair.manifest.file_count)).result(),
    )


def compare_outputs_in_workers(pairs: tuple[OutputPair, ...], thresholds: Thresholds, options: CompareOptions,
                               labels: np.ndarray | None) -> tuple[OutputResult, ...]:
    """Every output, its batches split over `options.workers` processes (spawned: TensorFlow may be loaded)."""
    from infer.shard import split

    if not pairs:
        return ()
    shards = [frozenset(s.stems) for s in split(pairs[0].manifest.stems, options.workers)]
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=len(shards), mp_context=context) as pool:
        return tuple(_compare_output(pool, pair, shards, thresholds, options, labels) for pair in pairs)
