"""The search alone, over verdicts given by a rule (which ops must be fp32), counting the candidates it asks for."""

from __future__ import annotations

import pytest

from infer.tune._search import SearchMode, search

OPS = tuple(f"op{i}" for i in range(64))


class Rule:
    """Passes when every op in `needed` is kept; remembers each distinct set asked, as the trials' cache does."""

    def __init__(self, needed: set[str]) -> None:
        self.needed = needed
        self.asked: dict[frozenset[str], bool] = {}

    def __call__(self, ops: tuple[str, ...], stage: str) -> bool:
        assert list(ops) == [op for op in OPS if op in ops], "candidates are in graph order"
        return self.asked.setdefault(frozenset(ops), self.needed <= set(ops))


@pytest.mark.parametrize("mode", ["bisect", "linear"])
def test_finds_exactly_the_needed_ops(mode: SearchMode) -> None:
    rule = Rule({"op40", "op41", "op45"})
    outcome = search(OPS, (), rule, mode)
    assert outcome.found == ("op40", "op41", "op45")
    assert outcome.grown == OPS[:46]  # the prefix that first passes


def test_bisection_asks_far_fewer_candidates_than_the_linear_walk() -> None:
    bisect, linear = Rule({"op40", "op41", "op45"}), Rule({"op40", "op41", "op45"})
    search(OPS, (), bisect, "bisect")
    search(OPS, (), linear, "linear")
    grown = 46
    assert len(linear.asked) >= grown  # one candidate per prefix length, then the shrink
    assert len(bisect.asked) < len(linear.asked) / 2


def test_seeds_that_pass_skip_the_growing_and_are_shrunk() -> None:
    rule = Rule({"op3", "op9"})
    outcome = search(OPS, ("op3", "op9", "op10", "op30"), rule, "bisect")
    assert outcome.found == ("op3", "op9") and outcome.grown == ("op3", "op9", "op10", "op30")
    assert len(rule.asked) <= 8


def test_seeds_that_fail_are_kept_while_the_prefix_grows() -> None:
    rule = Rule({"op50", "op20"})
    outcome = search(OPS, ("op50",), rule, "bisect")
    assert outcome.found == ("op20", "op50")
    assert outcome.grown == (*OPS[:21], "op50")


def test_every_op_failing_is_no_set() -> None:
    outcome = search(OPS, ("op1",), lambda ops, stage: False, "bisect")
    assert outcome.found is None


def test_dropping_any_one_op_of_the_result_fails() -> None:
    needed = {"op2", "op17", "op18", "op33", "op63"}
    rule = Rule(needed)
    found = search(OPS, ("op17",), rule, "bisect").found
    assert found is not None and set(found) == needed
    assert all(not rule(tuple(o for o in found if o != drop), "check") for drop in found)


def test_with_seeds_the_ops_from_the_first_seed_on_are_searched_first() -> None:
    seeded, plain = Rule({"op40", "op44"}), Rule({"op40", "op44"})
    outcome = search(OPS, ("op40",), seeded, "bisect")
    assert outcome.found == ("op40", "op44") and outcome.grown == OPS[40:45]
    search(OPS, (), plain, "bisect")
    assert len(seeded.asked) < len(plain.asked)
