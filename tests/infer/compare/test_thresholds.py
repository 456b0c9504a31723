"""msit's default fail rule, and overrides per metric and per output."""

from __future__ import annotations

import numpy as np
import pytest

from infer.compare._judge.metrics import Metrics, compute_metrics
from infer.compare.thresholds import ThresholdError, Thresholds, parse_threshold

GOLDEN = np.linspace(1.0, 2.0, 100)


def _metrics(actual: np.ndarray) -> Metrics:
    return compute_metrics(actual, GOLDEN, atol=1e-4, rtol=1e-3)


def test_defaults_are_msit_rule() -> None:
    limits = Thresholds().limits("probs:0")
    assert limits == {"CosineSimilarity": 0.99, "RelativeEuclideanDistance": 0.05, "KullbackLeiblerDivergence": 0.005,
                      "RootMeanSquareError": 1.0, "MeanRelativeError": 1.0}


def test_identical_passes_and_a_shift_fails_on_red() -> None:
    assert Thresholds().failures("probs:0", _metrics(GOLDEN)) == ()
    failures = Thresholds().failures("probs:0", _metrics(GOLDEN * 1.1))  # RED 0.1 > 0.05, cosine stays 1
    assert [f.metric for f in failures] == ["RelativeEuclideanDistance"]
    assert failures[0].describe() == "probs:0 RelativeEuclideanDistance 0.1 > 0.05"


def test_cosine_is_a_floor() -> None:
    actual = GOLDEN[::-1].copy()
    failures = Thresholds.parse(["red=off", "kl=off", "rmse=off"]).failures("probs:0", _metrics(actual))
    assert [f.metric for f in failures] == ["CosineSimilarity"]
    assert " < 0.99" in failures[0].describe()


def test_a_failure_never_reads_as_its_own_limit() -> None:
    """A cosine of 0.99999981 against a limit of 0.9999999 once read ``1 < 1``: the limit keeps every digit given,
    the value as many as it takes to differ from it."""
    from infer.compare.thresholds import Failure

    assert Failure("probs:0", "CosineSimilarity", 0.99999981, 0.9999999).describe() == (
        "probs:0 CosineSimilarity 0.99999981 < 0.9999999")
    assert Failure("probs:0", "CosineSimilarity", 0.9999999096, 0.99999991).describe() == (
        "probs:0 CosineSimilarity 0.9999999096 < 0.99999991")
    assert Failure("out:0", "RootMeanSquareError", 1.0000004, 1.0).describe() == (
        "out:0 RootMeanSquareError 1.0000004 > 1")
    assert parse_threshold("sample:cosine=0.9999999").describe() == "sample:CosineSimilarity=0.9999999"


def test_nan_fails_its_threshold() -> None:
    failures = Thresholds().failures("out:0", compute_metrics(np.zeros(3), np.ones(3), atol=0, rtol=0))
    assert "CosineSimilarity" in [f.metric for f in failures]
    assert failures[0].describe() == "out:0 CosineSimilarity NaN (limit 0.99)"


def test_override_for_all_and_for_one_output() -> None:
    thresholds = Thresholds.parse(["red=0.2", "probs:0:red=0.01", "logits:kl=off", "max_abs=0.5"])
    assert thresholds.limits("probs:0")["RelativeEuclideanDistance"] == 0.01
    assert thresholds.limits("other:0")["RelativeEuclideanDistance"] == 0.2
    assert "KullbackLeiblerDivergence" not in thresholds.limits("logits:0")
    assert thresholds.limits("other:0")["MaxAbsoluteError"] == 0.5


def test_per_output_wins_whatever_the_order() -> None:
    assert Thresholds.parse(["probs:red=0.01", "red=0.2"]).limits("probs:0")["RelativeEuclideanDistance"] == 0.01


def test_parse_forms() -> None:
    assert parse_threshold("CosineSimilarity=0.999").metric == "CosineSimilarity"
    setting = parse_threshold("scope/probs:0:MeanRelativeError=2")
    assert (setting.output, setting.metric, setting.limit) == ("scope/probs:0", "MeanRelativeError", 2.0)


@pytest.mark.parametrize(("text", "message"), [
    ("cosine", "--threshold 'cosine': expected metric=value or output:metric=value"),
    ("cosin=0.9", "--threshold 'cosin=0.9': unknown metric 'cosin' (did you mean 'cosine'?): expected one of "
                  "CosineSimilarity, "),
    ("probs:0:kld0=1", "--threshold 'probs:0:kld0=1': unknown metric 'kld0' (did you mean 'kld'?)"),
    ("xyz=1", "--threshold 'xyz=1': unknown metric 'xyz': expected one of"),
    ("cosine=nan", "--threshold 'cosine=nan': the limit cannot be NaN"),
    ("cosine=high", "--threshold 'cosine=high': expected a number (or off) after '=', found 'high'"),
])
def test_bad_threshold(text: str, message: str) -> None:
    with pytest.raises(ThresholdError) as caught:
        parse_threshold(text)
    assert caught.value.message.startswith(message)


def test_unknown_output_refused() -> None:
    with pytest.raises(ThresholdError, match="no output named 'logits'; outputs are: probs:0"):
        Thresholds.parse(["logits:kl=0.1"]).check_outputs(["probs:0"])


@pytest.mark.parametrize(("metric", "limit"), sorted(Thresholds().limits("probs:0").items()))
def test_a_metric_exactly_at_its_limit_passes_and_one_step_past_fails(metric: str, limit: float) -> None:
    """msit's rule is strict on both sides (cosine < 0.99 fails, RED > 0.05 fails): the limit itself passes."""
    from infer.compare.metric_names import HIGHER_IS_BETTER
    from infer.compare.thresholds import breaks

    worse = np.nextafter(limit, -np.inf if metric in HIGHER_IS_BETTER else np.inf)
    better = np.nextafter(limit, np.inf if metric in HIGHER_IS_BETTER else -np.inf)
    assert not breaks(metric, limit, limit)
    assert not breaks(metric, float(better), limit)
    assert breaks(metric, float(worse), limit)


def test_a_comparison_whose_red_is_exactly_the_limit_passes() -> None:
    """Through the whole rule on real metrics: an actual whose RED is the limit (to the last bit) is not a failure,
    and the same limit one step below it is."""
    metrics = _metrics(GOLDEN * 1.02)
    red = metrics.relative_euclidean_distance
    assert Thresholds.parse([f"red={red!r}"]).failures("probs:0", metrics) == ()
    below = float(np.nextafter(red, -np.inf))
    assert [f.metric for f in Thresholds.parse([f"red={below!r}"]).failures("probs:0", metrics)] == [
        "RelativeEuclideanDistance"]


@pytest.mark.parametrize("metric", ["CosineSimilarity", "RelativeEuclideanDistance", "MaxAbsoluteError"])
def test_per_sample_limits_follow_the_same_strict_rule(metric: str) -> None:
    """The per-sample check is the dataset rule over arrays: a sample exactly at its limit passes, NaN fails."""
    from infer.compare._judge.passes import _SampleScores
    from infer.compare.metric_names import HIGHER_IS_BETTER
    from infer.compare.thresholds import breaks

    limit = 0.5
    worse = np.nextafter(limit, -np.inf if metric in HIGHER_IS_BETTER else np.inf)
    values = np.array([limit, worse, np.nan, limit])
    scores = _SampleScores(scores={metric: values}, sample=np.arange(4), batch=np.zeros(4, np.int64), stems=("0",),
                           row=np.arange(4),
                           names=None, manifest=None)  # type: ignore[arg-type]  # the mask reads the scores only
    assert scores.breaking(metric, limit).tolist() == [breaks(metric, float(v), limit) for v in values] == [
        False, True, True, False]
