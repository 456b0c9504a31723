"""The measurement of one output, with or without `--workers`: two passes over shards of its batches, then a fold.

Pass one reads every batch once: per-batch metrics and pass-one accumulator, per-sample scores, top-k counts, the
plot data and whether every sample is the same (`infer.compare._judge.constant_outputs`). Pass two reads every batch
again for the dataset's KullbackLeiblerDivergence, which needs the global extremes of pass one (see
`infer.compare._judge.accumulate`). Each pass runs over a shard, a contiguous run of the dataset's batch stems, and
returns per-batch pieces; `measure_output` folds them in dataset order. One process runs a single shard holding
every stem, in itself; `compare_outputs_in_workers` hands N shards to a process pool, `compare_outputs_on_ray` to
Ray tasks on a cluster. The same floats are added in the same order either way, so 1 and N workers give equal
results, bit for bit.

Memory holds a few batches, never the dataset: each batch file is read or memory-mapped, and what pass one keeps
of a batch (its accumulator until the fold, its metrics, its per-sample scores, its plot points) is numbers in
flat arrays, never the batch's tensors nor an object per batch: at batch 1 a validation set is 50,000 batches, and
objects per batch were 3.5 KB a batch (issue 42; tests/infer/compare/test_retained.py holds it).
"""

from __future__ import annotations

import math
import multiprocessing
from array import array
from collections.abc import Callable, Collection, Iterator, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any, NamedTuple, TypeVar

import numpy as np

from binio.errors import InferError
from binio.file_stems import FileStems, StemList
from binio.heap import as_this_process
from binio.manifest import DatasetManifest
from binio.shards import split
from infer.compare._judge.accumulate import AccumulatorColumns, MetricAccumulator
from infer.compare._judge.constant_outputs import ConstantOutput, SameSamples
from infer.compare._judge.metrics import Metrics, MetricsColumns, as_float64
from infer.compare._judge.topk import TopKAccumulator, is_classifier
from infer.compare._sides.provenance import sample_names, sample_source
from infer.compare._sides.run_folders import OutputPair
from infer.compare.metric_names import HIGHER_IS_BETTER
from infer.compare.options import DEFAULT_TOPK, CompareOptions, CompareProgress
from infer.compare.result import BatchResults, OutputResult, PlotData, SampleScore
from infer.compare.thresholds import SAMPLE_METRICS, Failure, Thresholds
from infer.ray_cluster import RaySession, RayTasks

_T = TypeVar("_T")

# log10 |x - y| bin edges: from EXACT_BELOW up past float32's largest value, so every finite error of a float32
# output has its own bin (the report draws only the range the data fills). Errors below EXACT_BELOW count as
# exact: they are rounding noise of float64 arithmetic on float32 values, or zero.
EXACT_BELOW = 1e-12
ERROR_EDGES: tuple[float, ...] = tuple(float(e) for e in np.arange(-12.0, 39.0 + 1e-9, 0.25))


def batch_metrics(actual: np.ndarray, golden: np.ndarray, *, atol: float, rtol: float,
                  abs_diff: np.ndarray | None = None) -> tuple[MetricAccumulator, Metrics]:
    """One batch's metrics (both passes over the batch in memory) and its pass-one accumulator, to merge."""
    accumulator = MetricAccumulator(atol=atol, rtol=rtol)
    accumulator.add(actual, golden, abs_diff)
    accumulator.add_kl(actual, golden)
    return accumulator, accumulator.result()


def _row_scores(actual: np.ndarray, golden: np.ndarray, abs_diff: np.ndarray, rows: int) -> dict[str, np.ndarray]:
    """Each sample on its own, by the metrics of SAMPLE_METRICS, under the same rules as the dataset's metrics
    (`cosine_from_sums`, `red_from_sums`). `abs_diff` is |x - y|, flat (|d|·|d| = d·d, bit for bit)."""
    x = as_float64(actual).reshape(rows, -1)
    y = as_float64(golden).reshape(rows, -1)
    diff = abs_diff.reshape(rows, -1)
    sxy, sxx, syy, sdd = (np.einsum("ij,ij->i", a, b) for a, b in ((x, y), (x, x), (y, y), (diff, diff)))
    with np.errstate(divide="ignore", invalid="ignore"):
        cosine = np.minimum(sxy / (np.sqrt(sxx) * np.sqrt(syy)), 1.0)
        red = np.sqrt(sdd / syy)
    cosine[(sxx == 0) & (syy == 0)] = 1.0
    cosine[(sxx == 0) ^ (syy == 0)] = math.nan
    red[syy == 0] = np.where(sdd[syy == 0] == 0, 0.0, math.inf)
    elements = max(1, x.shape[1])
    return {"CosineSimilarity": cosine, "RelativeEuclideanDistance": red,
            "RootMeanSquareError": np.sqrt(sdd / elements),
            "MaxAbsoluteError": np.max(diff, axis=1) if x.shape[1] else np.zeros(rows)}


class _PlotCollector:
    """The report's error histogram and scatter points, batch by batch. The histogram's counts are integers, so
    the errors of many small batches are binned together (one histogram per 65,536 values, not per batch: at
    batch 1 a histogram a batch was a tenth of compare's time), with the same counts."""

    def __init__(self, points: int, batches: int) -> None:
        """`points`: about how many the scatter holds over `batches` batches: as many per batch where there are
        fewer batches, else one from every few batches (at batch 1, one a batch was 50,000 points)."""
        self.points_per_batch = max(1, points // max(1, batches))
        self.every = max(1, -(-batches // max(1, points)))  # a batch in `every` gives points, by its index
        self.counts = np.zeros(len(ERROR_EDGES) - 1, dtype=np.int64)
        self.exact = 0
        self.nonfinite = 0
        self.golden = array("d")  # the scatter's points, in dataset order: numbers, not an array per batch
        self.actual = array("d")
        self._pending: list[np.ndarray] = []  # errors at or above EXACT_BELOW, finite, not yet binned
        self._pending_values = 0
        self._picks: dict[int, np.ndarray] = {}  # batch size -> the scatter's positions in it

    def add(self, actual: np.ndarray, golden: np.ndarray, error: np.ndarray, index: int) -> None:
        """`error` is |x - y|, flat; `index` the batch's in the dataset."""
        x, y = as_float64(actual), as_float64(golden)
        finite = np.isfinite(error)
        finite_count = int(np.count_nonzero(finite))
        self.nonfinite += error.size - finite_count
        positive = error[finite & (error >= EXACT_BELOW)]
        self.exact += finite_count - int(positive.size)
        self._pending.append(positive)
        self._pending_values += positive.size
        if self._pending_values >= _BINNED_AT_ONCE:
            self._bin()
        if x.size and index % self.every == 0:
            picks = self._picks.get(x.size)
            if picks is None:
                picks = np.linspace(0, x.size - 1, min(self.points_per_batch, x.size)).astype(np.int64)
                self._picks[x.size] = picks
            self.golden.frombytes(y[picks].tobytes())
            self.actual.frombytes(x[picks].tobytes())

    def _bin(self) -> None:
        if not self._pending:
            return
        values = np.concatenate(self._pending) if len(self._pending) > 1 else self._pending[0]
        self._pending, self._pending_values = [], 0
        logs = np.clip(np.log10(values), ERROR_EDGES[0], ERROR_EDGES[-1])
        # Uniform bins given as a count and a range: numpy then computes each value's bin instead of sorting the
        # batch to search a list of edges, and its edges (linspace) are ERROR_EDGES exactly, so are the counts.
        self.counts = self.counts + np.histogram(logs, bins=len(ERROR_EDGES) - 1,
                                                 range=(ERROR_EDGES[0], ERROR_EDGES[-1]))[0]

    def __getstate__(self) -> dict[str, object]:
        self._bin()  # a shard's collector travels to the process that folds it with its counts complete
        return {**self.__dict__, "_picks": {}}

    def merge(self, other: _PlotCollector) -> None:
        """Folds in a later shard's collector: counts are integers, the points are appended in order. The counts
        are added into a new array: a shard's that came back from a Ray task is read-only (zero-copy)."""
        other._bin()
        self._bin()
        self.counts = self.counts + other.counts
        self.exact += other.exact
        self.nonfinite += other.nonfinite
        self.golden.extend(other.golden)
        self.actual.extend(other.actual)

    def result(self) -> PlotData:
        self._bin()
        return PlotData(error_edges=ERROR_EDGES, error_counts=tuple(int(c) for c in self.counts),
                        exact_count=self.exact, nonfinite_count=self.nonfinite,
                        scatter_golden=tuple(self.golden), scatter_actual=tuple(self.actual))


# Errors held for one histogram: small batches' are pooled (1,000s of batches of a classifier's scores), a large
# batch's are binned as they come (pooling them cost the copies' memory: 30 MiB at 1 MiB a batch).
_BINNED_AT_ONCE = 1 << 16


@dataclass
class _ShardPart:
    """What pass one keeps of a shard's batches, in dataset order, as columns (numbers in flat arrays): no tensor
    and no object per batch, so a process holding every batch's part stays small. The shard that starts the
    dataset folds its batches' accumulators as they complete (`folded`: the dataset's fold begins with them, in
    the same order) and keeps of each only what pass two's choice needs (`_KlSeeds`); a later shard keeps them
    whole (`AccumulatorColumns`), for the fold to add after the earlier shards' in dataset order. Not frozen: the
    accumulators are dropped once folded (`measure_output`)."""

    accumulators: AccumulatorColumns | _KlSeeds | None
    folded: MetricAccumulator | None
    metrics: MetricsColumns
    plot: _PlotCollector
    topk: TopKAccumulator | None
    same: SameSamples
    stems: StemList = field(default_factory=StemList)  # a range, where dump-bin named the files
    first_sample: array[int] = field(default_factory=lambda: array("q"))
    rows: array[int] = field(default_factory=lambda: array("q"))  # real samples in each batch
    score_rows: array[int] = field(default_factory=lambda: array("q"))  # per-sample score rows (1: not batch-major)
    scores: dict[str, array[float]] = field(  # metric -> one value per score row
        default_factory=lambda: {metric: array("d") for metric in SAMPLE_METRICS})

    def add(self, stem: str, first_sample: int, rows: int, accumulator: MetricAccumulator, metrics: Metrics,
            scores: dict[str, np.ndarray]) -> None:
        assert self.accumulators is not None  # filled by pass one, before the fold
        self.stems.append(stem)
        self.first_sample.append(first_sample)
        self.rows.append(rows)
        self.score_rows.append(len(scores["CosineSimilarity"]))
        self.accumulators.append(accumulator)
        if self.folded is not None:
            self.folded.merge(accumulator)
        self.metrics.append(metrics)
        for metric, column in self.scores.items():
            column.frombytes(np.ascontiguousarray(scores[metric], dtype=np.float64).tobytes())


class Measured(NamedTuple):
    """One output measured: its result, and whether its samples were all the same on a side (read in the same
    pass, `infer.compare._judge.constant_outputs`)."""

    result: OutputResult
    constant: ConstantOutput | None


_KlSums = tuple[float, float, float, int]  # one batch's kl_sum_a, kl_sum_b, kl_sum_alogab, kl_elements


def _classes(pair: OutputPair) -> int | None:
    """The class count of a classifier output (batch, classes); None for any other."""
    shape = pair.golden_spec.static_shape()
    return shape[1] if pair.batch_major and is_classifier(shape, pair.golden_spec.dt.is_float) else None


def check_topk(pairs: Sequence[OutputPair], options: CompareOptions) -> None:
    """Refuses a --topk that a classifier output has fewer classes than: its top-k would be every class, and its
    accuracy 100% whatever the model does. Left out, k is 5, or the class count where fewer."""
    if options.topk is None:
        return
    for pair in pairs:
        classes = _classes(pair)
        if classes is not None and options.topk > classes:
            raise InferError(f"--topk {options.topk}: output {pair.name} has {classes} classes; expected 1 to "
                               f"{classes}", hint="leave --topk out for k = 5, or the class count where fewer")


def _topk(pair: OutputPair, options: CompareOptions, labels: np.ndarray | None) -> TopKAccumulator | None:
    classes = _classes(pair)
    if classes is None:
        return None
    k = options.topk if options.topk is not None else min(DEFAULT_TOPK, classes)
    return TopKAccumulator(k, classes, with_labels=labels is not None)


def _pass_one(pair: OutputPair, stems: Collection[str], *, options: CompareOptions,
              labels: np.ndarray | None, on_batch: Callable[[], None] | None = None,
              fp16: bool = False) -> _ShardPart:
    topk = _topk(pair, options, labels)
    plot = _PlotCollector(options.scatter_points, pair.manifest.file_count)
    same = SameSamples(pair, stems, fp16=fp16)
    batch_major = pair.batch_major
    first = bool(pair.manifest.stems) and pair.manifest.stems[0] in stems  # the shard that starts the dataset
    part = _ShardPart(accumulators=_KlSeeds() if first else AccumulatorColumns(options.atol, options.rtol),
                      folded=MetricAccumulator(atol=options.atol, rtol=options.rtol) if first else None,
                      metrics=MetricsColumns(options.atol, options.rtol), plot=plot, topk=topk, same=same)
    # Here too, not only in measure_output: in a worker process the caller's error state does not apply.
    with np.errstate(all="ignore"):
        for batch in pair.batches(stems):
            # Each side widened to float64 once per batch; every consumer below takes these flat arrays.
            x, y = as_float64(batch.actual), as_float64(batch.golden)
            abs_diff = np.subtract(x, y)  # |x - y| once, for the metrics, the per-sample scores and the plot
            np.abs(abs_diff, out=abs_diff)
            accumulator, metrics = batch_metrics(x, y, atol=options.atol, rtol=options.rtol, abs_diff=abs_diff)
            rows = batch.rows if batch_major else 1
            part.add(batch.stem, batch.first_sample, batch.rows, accumulator, metrics,
                     _row_scores(x, y, abs_diff, rows))
            if topk is not None:
                topk.add(x.reshape(batch.rows, -1), y.reshape(batch.rows, -1),
                         None if labels is None else labels[batch.first_sample:batch.first_sample + batch.rows])
            plot.add(x, y, abs_diff, batch.first_sample // max(1, pair.manifest.batch))
            same.take(batch.actual, batch.golden, batch.rows, wide_actual=x, wide_golden=y)
            if on_batch is not None:
                on_batch()
    return part


class _KlSeeds:
    """What the fold needs of each batch of a shard folded as it goes: its four extremes and its pass-one KL sums
    (`measure_output`: a batch that saw the dataset's extremes is not read again), 8 numbers a batch."""

    __slots__ = ("_elements", "_floats")

    def __init__(self) -> None:
        self._floats = array("d")
        self._elements = array("q")

    def append(self, accumulator: MetricAccumulator) -> None:
        self._floats.extend((accumulator.min_x, accumulator.max_x, accumulator.min_y, accumulator.max_y,
                             accumulator.kl_sum_a, accumulator.kl_sum_b, accumulator.kl_sum_alogab))
        self._elements.append(accumulator.kl_elements)

    def __len__(self) -> int:
        return len(self._elements)

    def __getitem__(self, index: int) -> MetricAccumulator:
        """Batch `index`'s accumulator as far as `same_extremes` and `kl_sums` read it."""
        one = MetricAccumulator(atol=0.0, rtol=0.0)
        (one.min_x, one.max_x, one.min_y, one.max_y, one.kl_sum_a, one.kl_sum_b,
         one.kl_sum_alogab) = self._floats[7 * index:7 * index + 7]
        one.kl_elements = self._elements[index]
        return one


@dataclass(frozen=True)
class _KlRows:
    """A shard's KL sums from pass two, batch by batch in dataset order, as numbers in flat arrays."""

    stems: FileStems
    sums: array[float]  # kl_sum_a, kl_sum_b, kl_sum_alogab of each batch
    elements: array[int]

    def __iter__(self) -> Iterator[tuple[str, _KlSums]]:
        for i, stem in enumerate(self.stems):
            yield stem, (self.sums[3 * i], self.sums[3 * i + 1], self.sums[3 * i + 2], self.elements[i])


class _Except(Collection[str]):
    """A shard's stems but those at `left_out` (the batches pass one already has the KL sums of: a few), without a
    string or a set entry for each of the others."""

    def __init__(self, stems: FileStems, left_out: frozenset[int]) -> None:
        self.stems, self.left_out = stems, left_out

    def __contains__(self, stem: object) -> bool:
        place = self.stems.place(stem) if isinstance(stem, str) else None
        return place is not None and place not in self.left_out

    def __iter__(self) -> Iterator[str]:
        return (stem for place, stem in enumerate(self.stems) if place not in self.left_out)

    def __len__(self) -> int:
        return len(self.stems) - len(self.left_out)


def _pass_two(pair: OutputPair, stems: Collection[str], *, extremes: MetricAccumulator,
              on_batch: Callable[[], None] | None = None) -> _KlRows:
    """Each batch's KL sums, from a fresh accumulator holding the dataset's extremes: its sums start at 0, so they
    are the batch's exactly, and adding them to the dataset's in order equals one accumulator fed every batch."""
    read, sums, elements = StemList(), array("d"), array("q")
    with np.errstate(all="ignore"):
        for batch in pair.batches(stems):
            one = MetricAccumulator(atol=extremes.atol, rtol=extremes.rtol, min_x=extremes.min_x,
                                    max_x=extremes.max_x, min_y=extremes.min_y, max_y=extremes.max_y)
            one.add_kl(batch.actual, batch.golden)
            read.append(batch.stem)
            sums.extend((one.kl_sum_a, one.kl_sum_b, one.kl_sum_alogab))
            elements.append(one.kl_elements)
            if on_batch is not None:
                on_batch()
    return _KlRows(stems=read.frozen(), sums=sums, elements=elements)


def _each_shard(pool: Executor | None, work: Callable[[Collection[str]], _T], shards: Sequence[Collection[str]],
                on_batch: Callable[[], None] | None = None) -> list[_T]:
    """`work` over every shard, the results in shard order: in the pool's processes or Ray tasks, or here without
    a pool. With a pool, `on_batch` hears of a shard's batches as its result comes back (a callback does not
    travel to the pool's workers)."""
    if pool is None:
        return [work(shard) for shard in shards]
    futures = [pool.submit(work, shard) for shard in shards]
    results = []
    for shard, future in zip(shards, futures, strict=True):
        results.append(future.result())
        if on_batch is not None:
            for _ in shard:
                on_batch()
    return results


def _merge_topk(parts: list[_ShardPart]) -> TopKAccumulator | None:
    merged = parts[0].topk
    if merged is None:
        return None
    for part in parts[1:]:
        assert part.topk is not None  # every shard of one output makes the same decision
        merged.merge(part.topk)
    return merged


def measure_output(pair: OutputPair, thresholds: Thresholds, options: CompareOptions, labels: np.ndarray | None,
                   shards: Sequence[Collection[str]], pool: Executor | None = None,
                   on_batch: Callable[[], None] | None = None, *, fp16: bool = False) -> Measured:
    """One output over the whole dataset. `shards` are contiguous runs of the dataset's stems, in dataset order,
    together every stem once (the fold takes the batches in their order); they run in `pool`, or here, one after
    the other, without one. `on_batch` hears of every batch read (twice per batch: two passes): as it is read
    here, as its shard comes back from a pool."""
    here = on_batch if pool is None else None
    with np.errstate(all="ignore"):  # NaN and inf in outputs are counted and reported, not warned about
        parts = _each_shard(pool, partial(_pass_one, pair, options=options, labels=labels, on_batch=here, fp16=fp16),
                            shards, on_batch)
        dataset = _fold_pass_one(parts, options)
        # A batch holding the dataset's four extremes had its KL sums taken with them in pass one (its own
        # metrics): the same sums, so pass two reads only the other batches (none, for a one-batch dataset).
        found = [_same_extremes(part, dataset) for part in parts]  # per shard: batch position -> KL sums
        for part in parts:
            part.accumulators = None  # folded: from here on a batch keeps its metrics and scores only
        if on_batch is not None:
            for _ in range(sum(map(len, found))):  # read once only: the progress counts them as read twice
                on_batch()
        rest = [_Except(part.stems.frozen(), frozenset(known)) for part, known in zip(parts, found, strict=True)]
        wanted = [k for k, shard in enumerate(rest) if shard]
        read = dict(zip(wanted, _each_shard(pool, partial(_pass_two, pair, extremes=dataset, on_batch=here),
                                            [rest[k] for k in wanted], on_batch), strict=True))
        for k, part in enumerate(parts):  # added in dataset order, as one accumulator fed every batch would
            later = iter(read.get(k, ()))
            for i, stem in enumerate(part.stems):
                sums = found[k].get(i)
                if sums is None:
                    read_stem, sums = next(later)
                    assert read_stem == stem  # pass two reads the shard's other batches in the same order
                sum_a, sum_b, sum_alogab, elements = sums
                dataset.kl_sum_a += sum_a
                dataset.kl_sum_b += sum_b
                dataset.kl_sum_alogab += sum_alogab
                dataset.kl_elements += elements
        metrics = dataset.result()
        plot = parts[0].plot
        for part in parts[1:]:
            plot.merge(part.plot)
        topk = _merge_topk(parts)
        samples = _SampleScores.gather(parts, pair)
        sample_limits = thresholds.sample_limits(pair.name)
        failing = samples.failing(sample_limits)
        result = OutputResult(
            index=pair.index, name=pair.name, actual_dtype=pair.actual_spec.dtype,
            golden_dtype=pair.golden_spec.dtype, shape=pair.golden_spec.static_shape(), metrics=metrics,
            limits=thresholds.limits(pair.name), failures=thresholds.failures(pair.name, metrics),
            batches=_batch_results(parts, pair, options, thresholds),
            worst_samples=tuple(samples.score(i) for i in samples.ranked(options.worst_samples)),
            topk=None if topk is None else topk.result(), plot=plot.result(),
            sample_limits=sample_limits, failing_samples=tuple(int(samples.sample[i]) for i in failing),
            worst_failing=samples.worst_failure(pair.name, failing, sample_limits), compared_as=pair.compared_as,
        )
        return Measured(result, SameSamples.judge(pair.name, [part.same for part in parts]))


def _fold_pass_one(parts: Sequence[_ShardPart], options: CompareOptions) -> MetricAccumulator:
    """Every batch's pass-one accumulator merged, in dataset order (so 1 and N shards add the same floats in the
    same order)."""
    dataset = MetricAccumulator(atol=options.atol, rtol=options.rtol)
    for k, part in enumerate(parts):
        if part.folded is not None:  # the first shard's batches, folded in order as they completed
            assert k == 0  # only the shard that starts the dataset folds its own
            dataset = part.folded
            continue
        assert isinstance(part.accumulators, AccumulatorColumns)  # folded once
        for i in range(len(part.accumulators)):
            dataset.merge(part.accumulators[i])
    return dataset


def _same_extremes(part: _ShardPart, dataset: MetricAccumulator) -> dict[int, _KlSums]:
    """The shard's batches (by position) that saw the dataset's four extremes, with their pass-one KL sums."""
    assert part.accumulators is not None
    found = {}
    for i in range(len(part.accumulators)):
        one = part.accumulators[i]
        if one.same_extremes(dataset):
            found[i] = one.kl_sums()
    return found


def _batch_results(parts: Sequence[_ShardPart], pair: OutputPair, options: CompareOptions,
                   thresholds: Thresholds) -> BatchResults:
    """Every shard's batches as one table of columns, in dataset order."""
    if len(parts) == 1:  # one process: its columns are the table's, not copied
        metrics, rows, stems = parts[0].metrics, parts[0].rows, parts[0].stems
    else:
        metrics, rows, stems = MetricsColumns(options.atol, options.rtol), array("q"), StemList()
        for part in parts:
            metrics.extend(part.metrics)
            rows.extend(part.rows)
            stems.extend(part.stems)
    return BatchResults(stems.frozen(), rows, metrics, output=pair.name,
                        thresholds=thresholds)


def _joined_stems(parts: Sequence[_ShardPart]) -> FileStems:
    """Every shard's stems, in dataset order."""
    if len(parts) == 1:
        return parts[0].stems.frozen()
    joined = StemList()
    for part in parts:
        joined.extend(part.stems)
    return joined.frozen()


@dataclass(frozen=True)
class _SampleScores:
    """Every score row of one output over the dataset (a sample each for a batch-major output, a batch each
    otherwise), in dataset order."""

    scores: dict[str, np.ndarray]
    sample: np.ndarray  # the dataset index of each row's (first) sample
    batch: np.ndarray  # the position of each row's batch in `stems`
    stems: Sequence[str]  # every batch's stem, in dataset order
    row: np.ndarray
    names: Sequence[str] | None
    manifest: DatasetManifest

    @classmethod
    def gather(cls, parts: Sequence[_ShardPart], pair: OutputPair) -> _SampleScores:
        def joined(columns: list[array[Any]], dtype: type) -> np.ndarray:
            """The shards' columns as one array: a view of the one shard's, without a copy."""
            views: list[np.ndarray] = [np.frombuffer(column, dtype=dtype) for column in columns]
            return views[0] if len(views) == 1 else np.concatenate(views) if views else np.zeros(0, dtype)

        scores = {metric: joined([p.scores[metric] for p in parts], np.float64) for metric in SAMPLE_METRICS}
        first = joined([p.first_sample for p in parts], np.int64)
        counts = joined([p.score_rows for p in parts], np.int64)
        batch = np.repeat(np.arange(counts.size, dtype=np.int64), counts)
        starts = np.cumsum(counts) - counts  # each batch's first score row
        row = np.arange(batch.size, dtype=np.int64) - starts[batch]
        return cls(scores=scores, sample=first[batch] + row, batch=batch,
                   stems=_joined_stems(parts), row=row,
                   names=sample_names(pair.manifest), manifest=pair.manifest)

    def ranked(self, count: int | None = None, among: np.ndarray | None = None) -> np.ndarray:
        """Row positions, worst first: the lowest cosine (NaN first), ties broken by the larger max |x - y|
        (NaN first), then by dataset order."""
        cosine, worst_abs = self.scores["CosineSimilarity"], self.scores["MaxAbsoluteError"]
        key_cosine = np.where(np.isnan(cosine), -np.inf, cosine)
        key_abs = np.where(np.isnan(worst_abs), np.inf, worst_abs)
        order = np.lexsort((-key_abs, key_cosine))  # stable: equal keys keep dataset order
        if among is not None:
            order = order[np.isin(order, among)]
        return order if count is None else order[:count]

    def breaking(self, metric: str, limit: float) -> np.ndarray:
        """A mask of the rows whose `metric` breaks `limit` (a NaN breaks any limit, as `breaks` has it)."""
        values = self.scores[metric]
        with np.errstate(invalid="ignore"):
            broken = values < limit if metric in HIGHER_IS_BETTER else values > limit
        return broken | np.isnan(values)

    def failing(self, limits: dict[str, float]) -> np.ndarray:
        """Positions of the rows that break any of `limits`, in dataset order."""
        mask = np.zeros(self.sample.size, dtype=bool)
        for metric, limit in limits.items():
            mask |= self.breaking(metric, limit)
        return np.flatnonzero(mask)

    def score(self, i: int) -> SampleScore:
        sample = int(self.sample[i])
        return SampleScore(sample=sample, stem=self.stems[int(self.batch[i])], row=int(self.row[i]),
                           source=sample_source(self.manifest, self.names, sample),
                           **{_SCORE_FIELDS[m]: float(self.scores[m][i]) for m in SAMPLE_METRICS})

    def worst_failure(self, output: str, failing: np.ndarray, limits: dict[str, float]) -> Failure | None:
        """The worst of the failing rows, as the first limit it breaks."""
        if not failing.size:
            return None
        i = int(self.ranked(1, among=failing)[0])
        score = self.score(i)
        metric = next(m for m in SAMPLE_METRICS if m in limits and self.breaking(m, limits[m])[i])
        return Failure(output=f"{output} sample {score.sample} ({score.source})", metric=metric,
                       value=float(self.scores[metric][i]), limit=limits[metric])


_SCORE_FIELDS = {"CosineSimilarity": "cosine_similarity", "RelativeEuclideanDistance": "relative_euclidean_distance",
                 "RootMeanSquareError": "root_mean_square_error", "MaxAbsoluteError": "max_absolute_error"}


def batch_counter(pair: OutputPair, progress: CompareProgress | None) -> Callable[[], None] | None:
    """What hears of each batch read of `pair` (two passes: twice the batches) and tells `progress`."""
    if progress is None:
        return None
    total, done = 2 * pair.manifest.file_count, [0]
    progress(pair.name, 0, total)

    def on_batch() -> None:
        done[0] += 1
        progress(pair.name, done[0], total)

    return on_batch


def compare_outputs_in_workers(pairs: tuple[OutputPair, ...], thresholds: Thresholds, options: CompareOptions,
                               labels: np.ndarray | None, progress: CompareProgress | None = None, *,
                               fp16: bool = False) -> tuple[Measured, ...]:
    """`infer compare --workers N`: every output, its batches split into `options.workers` contiguous shards
    measured in as many processes (spawned: TensorFlow may be loaded); this process folds the pieces in dataset
    order, so the result equals one process's bit for bit."""
    if not pairs:
        return ()
    shards = [s.stems for s in split(pairs[0].manifest.stems, options.workers)]
    context = multiprocessing.get_context("spawn")
    # Each worker keeps freed memory as this process does (binio.heap): its batches' temporaries are the same
    # few sizes over and over, which page-faulted in afresh took two thirds of compare's time.
    with ProcessPoolExecutor(max_workers=len(shards), mp_context=context, initializer=as_this_process()) as pool:
        return tuple(measure_output(pair, thresholds, options, labels, shards, pool, batch_counter(pair, progress),
                                    fp16=fp16) for pair in pairs)


def compare_outputs_on_ray(pairs: tuple[OutputPair, ...], thresholds: Thresholds, options: CompareOptions,
                           labels: np.ndarray | None, progress: CompareProgress | None = None, *,
                           fp16: bool = False) -> tuple[Measured, ...]:
    """`infer compare --engine ray`: the same shards and fold as `compare_outputs_in_workers`, each shard's two
    passes a Ray task of one CPU on the cluster (`--workers N` shards, else one per CPU), so the result equals
    one process's bit for bit. The batch files are read where the task runs: a path every node sees alike."""
    if not pairs:
        return ()
    with RaySession(options.scale.address) as session:
        count = options.workers if options.workers > 1 else session.cpus()
        shards = [s.stems for s in split(pairs[0].manifest.stems, count)]
        pool = RayTasks(session)
        return tuple(measure_output(pair, thresholds, options, labels, shards, pool, batch_counter(pair, progress),
                                    fp16=fp16) for pair in pairs)
