"""The damaged-conversion corpus of issue 29 (tests/infer/compare/damaged/): at least 30 damaged conversions across
five model families, a third of them below msit's per-tensor limits at the damaged layer, and every family's
healthy conversion in fp32 and fp16. Done when the layer-wise mark is exact on at least 90% of the damaged ones
with no mark on any healthy one (39 of 40 with the error bands); `python -m tests.infer.compare.damaged.measure`
prints the case-by-case table."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.infer.compare.damaged.cases import CASES, PRECISION_MODES, Corpus
from tests.infer.compare.damaged.families import FAMILIES
from tests.infer.compare.damaged.measure import Outcome, measure


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Outcome], list[Outcome]]:
    return measure(tmp_path_factory.mktemp("damaged-corpus"))


def test_the_corpus_spans_families_modes_and_subtle_damage() -> None:
    assert len(CASES) >= 30 and len({case.name for case in CASES}) == len(CASES)
    assert {case.family for case in CASES} == set(FAMILIES) and len(FAMILIES) >= 5
    for family in FAMILIES:
        assert {case.precision_mode for case in CASES if case.family == family} == set(PRECISION_MODES), family
    assert 3 * sum(case.subtle for case in CASES) >= len(CASES)


@pytest.mark.slow
def test_a_case_is_its_conversion_with_only_the_onnx_model_changed(tmp_path: Path) -> None:
    corpus = Corpus(tmp_path)
    case = CASES[0]
    built, healthy = corpus.build(case), corpus.healthy(case.family, case.precision_mode)
    assert built.contract.pb_sha256 == healthy.contract.pb_sha256 and built.bins == healthy.bins
    assert built.contract.converted is not None and healthy.contract.converted is not None
    assert built.contract.converted.sha256 != healthy.contract.converted.sha256
    assert built.contract.converted_path is not None and built.contract.converted_path.read_bytes() != (
        healthy.contract.converted_path.read_bytes() if healthy.contract.converted_path else b"")


@pytest.mark.slow
def test_healthy_conversions_pass_with_no_mark(outcomes: tuple[list[Outcome], list[Outcome]]) -> None:
    _, healthy = outcomes
    assert len(healthy) == len(FAMILIES) * len(PRECISION_MODES)
    for outcome in healthy:
        assert outcome.passed and not outcome.band_flagged and not outcome.marked, outcome.name


@pytest.mark.slow
def test_every_damage_shows_in_the_outputs(outcomes: tuple[list[Outcome], list[Outcome]]) -> None:
    """No case is damage the outputs cannot see: each fails msit's rule or its precision mode's band."""
    damaged, _ = outcomes
    assert [o.name for o in damaged if o.passed and not o.band_flagged] == []


@pytest.mark.slow
def test_a_third_of_the_damage_stays_below_msits_limits_at_its_layer(
        outcomes: tuple[list[Outcome], list[Outcome]]) -> None:
    damaged, _ = outcomes
    assert 3 * sum(o.below_limits for o in damaged) >= len(damaged)


@pytest.mark.slow
def test_the_mark_names_the_damaged_layer(outcomes: tuple[list[Outcome], list[Outcome]]) -> None:
    """Issue 29's bar. Measured before the error bands: 20 of 40 exact, none of the 17 below msit's limits; with
    each tensor judged against its band: 39 of 40, the 17 below msit's limits all exact."""
    damaged, healthy = outcomes
    assert len(damaged) >= 30 and len({o.family for o in damaged}) >= 5
    assert not [o.name for o in healthy if o.marked]
    misses = [f"{o.name}: marked {o.marked or 'nothing'}, expected {o.expected_layer}" for o in damaged if not o.exact]
    assert 10 * len(misses) <= len(damaged), "\n".join(misses)
