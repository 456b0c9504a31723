"""infer's ten metrics against msaccucmp's own functions (mindstudio-probe 26.2.0) on the array corpus: equal to
float32 precision, except where infer departs on purpose (docs/metrics.md), each departure pinned below.

msaccucmp casts both tensors to float32 and computes in it; infer computes in float64. "Equal to float32
precision": within 1e-6 of the larger of the value and the metric's natural unit, that is 1 for the scale-free
ones, the element count for AccumulatedRelativeError (a sum of per-element ratios), the data's largest magnitude for
the absolute errors (float32 rounds each input by up to 6e-8 of it). Measured: at most 1.3e-7 of that anywhere.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

from infer.compare._judge.accumulate import MetricAccumulator
from infer.compare._judge.metrics import EPS, Metrics, compute_metrics
from infer.compare.metric_names import CSV_METRICS
from tests.infer.compare.array_corpus import PAIRS, ArrayPair
from tests.infer.compare.msaccucmp_code import MSPROBE_PIN, msaccucmp_metrics

F32_SQUARE_MAX = math.sqrt(float(np.finfo(np.float32).max))  # ~1.84e19: a float32 square above it is inf
F32_SQUARE_MIN = math.sqrt(float(np.finfo(np.float32).tiny))  # ~1.08e-19: a float32 square below it is subnormal
SQUARED = frozenset({"CosineSimilarity", "RelativeEuclideanDistance", "RootMeanSquareError"})
SCALE_FREE = frozenset({"CosineSimilarity", "RelativeEuclideanDistance", "KullbackLeiblerDivergence",
                        "MaxRelativeError", "MeanRelativeError"})
# What msaccucmp gives for an empty tensor without an error: the rest raise or are NaN (numpy's max of nothing).
DEFINED_WHEN_EMPTY = frozenset({"CosineSimilarity", "RelativeEuclideanDistance", "AccumulatedRelativeError"})


@pytest.fixture(scope="module")
def theirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, str]]:
    results = msaccucmp_metrics([(p.actual, p.golden) for p in PAIRS], tmp_path_factory.mktemp("msaccucmp"))
    return {pair.name: result for pair, result in zip(PAIRS, results, strict=True)}


def _pair(name: str) -> ArrayPair:
    return next(p for p in PAIRS if p.name == name)


def _theirs(theirs: dict[str, dict[str, str]], name: str, metric: str) -> float:
    return float(theirs[name][metric])  # "NaN", "inf" and repr(float) all read


def _ours(name: str) -> Metrics:
    pair = _pair(name)
    return compute_metrics(pair.actual, pair.golden, atol=0.0, rtol=0.0)


def _flat(array: np.ndarray) -> np.ndarray:
    return np.asarray(array, dtype=np.float64).ravel()


def _largest_finite(pair: ArrayPair) -> float:
    values = np.concatenate([_flat(pair.actual), _flat(pair.golden)])
    values = np.abs(values[np.isfinite(values)])
    return float(values.max()) if values.size else 0.0


def _float32_rounds(array: np.ndarray) -> bool:
    """An integer tensor float32 cannot hold exactly (a value past 2^24 in magnitude)."""
    return array.dtype.kind in "iu" and bool(np.any(array.astype(np.float32).astype(array.dtype) != array))


def departure(pair: ArrayPair, metric: str) -> str:
    """Why infer's number is not msaccucmp's for this pair, by the rules docs/metrics.md gives; "" where it is."""
    x, y = _flat(pair.actual), _flat(pair.golden)
    shape = pair.actual.shape
    if not x.size and metric not in DEFINED_WHEN_EMPTY:
        return "empty tensor"
    if pair.actual.dtype == bool and pair.golden.dtype == bool and metric != "CosineSimilarity":
        return "bool tensors"
    if _float32_rounds(pair.actual) or _float32_rounds(pair.golden):
        return "integers past 2^24"
    if metric == "CosineSimilarity" and sum(shape) == len(shape):
        return "dims all 1"
    if metric == "RelativeEuclideanDistance":
        with np.errstate(all="ignore"):
            if math.sqrt(float(np.sum(y * y))) <= EPS < math.sqrt(float(np.sum((x - y) ** 2))):
                return "all-zero golden"
    if metric in SQUARED and _largest_finite(pair) > F32_SQUARE_MAX:
        return "float32 overflow"
    with np.errstate(all="ignore"):
        if metric == "RootMeanSquareError" and 0 < float(np.max(np.abs(x - y), initial=0.0)) < F32_SQUARE_MIN:
            return "float32 underflow"
    return ""


def _unit(pair: ArrayPair, metric: str) -> float:
    if metric in SCALE_FREE:
        return 1.0
    if metric == "AccumulatedRelativeError":
        return float(pair.actual.size)
    return _largest_finite(pair)


def agree(ours: float, theirs: float, unit: float) -> bool:
    if math.isnan(ours) or math.isnan(theirs):
        return math.isnan(ours) and math.isnan(theirs)
    if math.isinf(ours) or math.isinf(theirs):
        return ours == theirs
    return abs(ours - theirs) <= 1e-6 * max(abs(theirs), unit)


def _cell_numbers(cell: str) -> list[float]:
    found = re.fullmatch(r"\((.+);(.+)\),\((.+);(.+)\)", cell)
    assert found, cell
    return [float(v) for v in found.groups()]


def test_the_corpus_has_every_kind_of_pair() -> None:
    assert len(PAIRS) >= 40
    assert len({p.name for p in PAIRS}) == len(PAIRS)
    assert {p.kind for p in PAIRS} == {"random", "constant", "zeros", "nonfinite", "fp16", "int32", "int64", "bool",
                                       "tiny", "huge", "ones shape", "empty"}


@pytest.mark.slow
def test_every_metric_is_msaccucmps_to_float32_precision(theirs: dict[str, dict[str, str]]) -> None:
    compared, differing = 0, []
    for pair in PAIRS:
        ours = compute_metrics(pair.actual, pair.golden, atol=0.0, rtol=0.0)
        for metric in CSV_METRICS:
            if metric == "StandardDeviation" or departure(pair, metric):
                continue
            compared += 1
            mine, their = ours.value(metric), _theirs(theirs, pair.name, metric)
            if not agree(mine, their, _unit(pair, metric)):
                differing.append(f"{pair.name}: {metric} infer {mine!r}, msaccucmp {their!r}")
    assert not differing, "\n".join(differing)
    # the departures are a few dozen of the pairs' metrics, no more: 16 of the two bool pairs, 18 of the two int64
    # pairs past 2^24, the rest those of the five rules before them
    assert compared >= 9 * len(PAIRS) - 40 - 16 - 18


def test_standard_deviation_cell_is_msaccucmps(theirs: dict[str, dict[str, str]]) -> None:
    differing = []
    for pair in PAIRS:
        if departure(pair, "StandardDeviation"):
            continue
        mine = compute_metrics(pair.actual, pair.golden, atol=0.0, rtol=0.0).standard_deviation
        their = theirs[pair.name]["StandardDeviation"]
        # Both rounded to three decimals: one step (0.001) apart at most, plus float32's precision of large ones.
        if not all(a == b or (math.isnan(a) and math.isnan(b)) or abs(a - b) <= 1e-3 + 1e-6 * abs(b)
                   for a, b in zip(_cell_numbers(mine), _cell_numbers(their), strict=True)):
            differing.append(f"{pair.name}: infer {mine}, msaccucmp {their}")
    assert not differing, "\n".join(differing)


def test_departure_cosine_of_a_tensor_whose_dims_are_all_one(theirs: dict[str, dict[str, str]]) -> None:
    # msaccucmp answers 1.0 for any shape whose dims are all 1 (its "Scalar"), whatever the values; infer computes:
    # one value against another is +1 or -1 by their signs, NaN against a zero.
    for name, ours in (("shape (1,1,1,1), opposite sign", -1.0), ("shape (), opposite sign", -1.0),
                       ("shape (1,), same sign", 1.0)):
        assert _theirs(theirs, name, "CosineSimilarity") == 1.0
        assert _ours(name).cosine_similarity == ours
    assert _theirs(theirs, "shape (1,1), actual zero", "CosineSimilarity") == 1.0
    assert math.isnan(_ours("shape (1,1), actual zero").cosine_similarity)


def test_departure_red_against_an_all_zero_golden(theirs: dict[str, dict[str, str]]) -> None:
    # msaccucmp: a golden of norm <= eps gives RED 0, whatever the actual; infer: inf unless the actual is as zero.
    for name in ("golden all zero", "golden all zero, actual tiny", "tiny golden, normal actual"):
        assert _theirs(theirs, name, "RelativeEuclideanDistance") == 0.0
        assert _ours(name).relative_euclidean_distance == math.inf
    for name in ("both all zero", "tiny, negated"):  # both sides within eps of zero: 0 on both sides
        assert _theirs(theirs, name, "RelativeEuclideanDistance") == 0.0
        assert _ours(name).relative_euclidean_distance == 0.0


def test_departure_float32_range(theirs: dict[str, dict[str, str]]) -> None:
    # msaccucmp squares in float32: at 1e20 the norms are inf, cosine 0 and RED 0 or NaN. infer's numbers are those
    # of the same tensors scaled into range (cosine and RED do not depend on the scale).
    huge = _pair("huge 1e20, 1e-3 noise")
    scaled = compute_metrics(_flat(huge.actual) * 1e-20, _flat(huge.golden) * 1e-20, atol=0.0, rtol=0.0)
    assert _theirs(theirs, huge.name, "CosineSimilarity") == 0.0
    assert _theirs(theirs, huge.name, "RelativeEuclideanDistance") == 0.0
    assert _ours(huge.name).cosine_similarity == pytest.approx(scaled.cosine_similarity, abs=1e-12)
    assert 0.999 < scaled.cosine_similarity < 1.0
    assert _ours(huge.name).relative_euclidean_distance == pytest.approx(scaled.relative_euclidean_distance)
    assert math.isnan(_theirs(theirs, "huge 1e20, negated", "RelativeEuclideanDistance"))
    assert _ours("huge 1e20, negated").relative_euclidean_distance == pytest.approx(2.0)
    # And at 1e-23 differences the squares are subnormal there: RMSE loses digits; infer's is the scaled one's.
    tiny = _pair("tiny, 1e-3 noise")
    rmse = float(np.sqrt(np.mean((_flat(tiny.actual) * 1e20 - _flat(tiny.golden) * 1e20) ** 2))) * 1e-20
    assert _ours(tiny.name).root_mean_square_error == pytest.approx(rmse, rel=1e-12)
    assert not agree(_theirs(theirs, tiny.name, "RootMeanSquareError"), rmse, _largest_finite(tiny))


def test_departure_empty_tensor(theirs: dict[str, dict[str, str]]) -> None:
    # msaccucmp: NaN where numpy has no max or mean of nothing; infer: an empty pair is equal, so every error is 0.
    for name in ("empty (0,)", "empty (2,0,3)"):
        ours = _ours(name)
        for metric in set(CSV_METRICS) - DEFINED_WHEN_EMPTY - {"StandardDeviation"}:
            assert math.isnan(_theirs(theirs, name, metric)), metric
            assert ours.value(metric) == 0.0, metric
        for metric in DEFINED_WHEN_EMPTY:
            assert agree(ours.value(metric), _theirs(theirs, name, metric), 1.0), metric
        assert theirs[name]["StandardDeviation"] == "(nan;nan),(nan;nan)"
        assert ours.standard_deviation == "(0.000;0.000),(0.000;0.000)"


def test_departure_bool_against_bool(theirs: dict[str, dict[str, str]]) -> None:
    # msaccucmp leaves two bool tensors bool (AlgorithmManager casts to float32 unless both are bool) and gives NaN
    # for every metric outside its BOOL_ALGORITHM; RED, inside it, is NaN too (numpy refuses to subtract bools), and
    # so is the StandardDeviation cell. infer takes True as 1 and False as 0: MeanAbsoluteError is the share of the
    # mask that differs, MaxAbsoluteError 1 if any.
    for name, flipped in (("bool masks, 10% flipped", True), ("bool masks, equal", False)):
        pair, ours = _pair(name), _ours(name)
        share = float(np.mean(pair.actual != pair.golden))
        for metric in set(CSV_METRICS) - {"CosineSimilarity"}:
            assert theirs[name][metric] == "NaN", metric
        assert agree(ours.cosine_similarity, _theirs(theirs, name, "CosineSimilarity"), 1.0)
        assert ours.mean_absolute_error == share and (share > 0) == flipped
        assert ours.max_absolute_error == (1.0 if flipped else 0.0)
        assert ours.root_mean_square_error == pytest.approx(math.sqrt(share))


def test_departure_integers_past_2_to_the_24(theirs: dict[str, dict[str, str]]) -> None:
    # msaccucmp casts both sides to float32, where 2^40 and 2^40 + 1 are one number: ids off by one read as equal.
    # infer takes them as float64, exact to 2^53: the difference shows.
    name = "int64 ids above 2^24, off by one"
    pair = _pair(name)
    assert np.array_equal(pair.actual.astype(np.float32), pair.golden.astype(np.float32))
    assert _theirs(theirs, name, "MaxAbsoluteError") == 0.0 and _theirs(theirs, name, "CosineSimilarity") == 1.0
    assert _ours(name).max_absolute_error == 1.0 and _ours(name).mean_absolute_error == 1.0
    assert float(np.float64(2**53) + 1) == 2.0**53  # past 2^53 float64 merges them too: infer's own bound
    # below 2^24 the two agree (the pair is compared with the others)
    assert not departure(_pair("int64 below 2^24, off by one here and there"), "MaxAbsoluteError")


def test_the_departure_rules_cover_only_what_docs_metrics_lists() -> None:
    reasons = {departure(p, m) for p in PAIRS for m in CSV_METRICS} - {""}
    assert reasons == {"empty tensor", "dims all 1", "all-zero golden", "float32 overflow", "float32 underflow",
                       "bool tensors", "integers past 2^24"}
    text = (Path(__file__).parents[3] / "docs" / "metrics.md").read_text()
    for heading in ("Cosine of a tensor whose dims are all 1", "RelativeEuclideanDistance against an all-zero golden",
                    "float32", "Empty tensors", "Six decimals", "Bool against bool", "Integers past 2^24"):
        assert heading in text, heading


def test_streaming_gives_the_same_numbers_on_the_corpus() -> None:
    # The batch-by-batch accumulator (what infer compare runs) equals compute_metrics on every pair, in 3 batches.
    for pair in PAIRS:
        x, y = _flat(pair.actual), _flat(pair.golden)
        parts = np.array_split(np.arange(x.size), 3)
        accumulator = MetricAccumulator(atol=0.0, rtol=0.0)
        for part in parts:
            accumulator.add(x[part], y[part])
        for part in parts:
            accumulator.add_kl(x[part], y[part])
        streamed, direct = accumulator.result(), compute_metrics(x, y, atol=0.0, rtol=0.0)
        for metric in CSV_METRICS:
            if metric != "StandardDeviation":
                assert streamed.value(metric) == pytest.approx(direct.value(metric), rel=1e-9, abs=1e-12,
                                                               nan_ok=True), (pair.name, metric)


def test_ci_installs_the_pinned_msaccucmp_without_its_dependencies() -> None:
    ci = (Path(__file__).parents[3] / ".ci" / "run").read_text()
    assert f"pip install --no-deps {MSPROBE_PIN} " in ci  # the README's test command: tests/test_docs.py
    assert "export INFER_TESTS_NEED_MSPROBE=1" in ci  # there a missing msaccucmp fails its tests
