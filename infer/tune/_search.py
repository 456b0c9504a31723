"""The search for a small set of ops to keep in fp32, over a verdict function that converts, runs and compares.

Two steps, as Polygraphy's `debug precision` does for TensorRT, plus one it lacks:
1. grow: the smallest prefix of the ops in graph order that, kept in fp32 together with the seeds, passes.
   ``bisect`` halves the range of prefix lengths (log2(n) candidates); ``linear`` adds one op at a time (up to n).
   Both assume that keeping more ops in fp32 never makes a model worse, which holds for rounding and overflow.
   With seeds, the ops from the first seed on are tried first (before it, every tensor was within the
   thresholds, so the fix is rarely there): when they pass, the prefix is searched among them alone.
2. shrink: drop what turned out not to be needed, in chunks halving down to single ops (delta debugging's
   ddmin): every op left has been tried out on its own, so dropping any one of them fails.
The seeds (the first diverging ops, those where fp16 gave inf/NaN) are tried first; when they pass alone the grow
step is skipped.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from binio.vocabulary import values_of

# How the ops are searched (Polygraphy debug precision's names): halving them in graph order, or one at a time.
SearchMode = Literal["bisect", "linear"]
MODES: tuple[str, ...] = values_of(SearchMode)

# Says whether keeping these ops (in graph order) in fp32 passes; `stage` names why it is tried.
Verdict = Callable[[tuple[str, ...], str], bool]


@dataclass(frozen=True)
class SearchOutcome:
    found: tuple[str, ...] | None  # the set, in graph order; None when even every op in fp32 fails
    grown: tuple[str, ...] = ()  # what the grow step (or the seeds) reached, before shrinking


def ordered(ops: Sequence[str], chosen: set[str] | frozenset[str]) -> tuple[str, ...]:
    return tuple(op for op in ops if op in chosen)


def find_prefix(ops: Sequence[str], seeds: frozenset[str], passes: Verdict, mode: str) -> int:
    """The smallest k such that seeds + ops[:k] passes, knowing that k = len(ops) passes and seeds alone fail."""
    if mode == "linear":
        for k in range(1, len(ops) + 1):
            if k == len(ops) or passes(ordered(ops, seeds | set(ops[:k])), f"linear {k}/{len(ops)}"):
                return k
        return len(ops)
    low, high = 0, len(ops)  # seeds + ops[:low] fails, seeds + ops[:high] passes
    while high - low > 1:
        middle = (low + high) // 2
        if passes(ordered(ops, seeds | set(ops[:middle])), f"bisect {middle}/{len(ops)}"):
            high = middle
        else:
            low = middle
    return high


def shrink(ops: Sequence[str], found: tuple[str, ...], passes: Verdict) -> tuple[str, ...]:
    """Drops chunks of `found` (halving down to single ops) while what is left still passes."""
    current = list(found)
    chunk = max(1, len(current) // 2)
    while True:
        index = 0
        while index < len(current) and len(current) > 1:
            trial = current[:index] + current[index + chunk:]
            dropped = current[index:index + chunk]
            if trial and passes(ordered(ops, set(trial)), f"drop {', '.join(dropped[:3])}"
                                                           f"{'...' if len(dropped) > 3 else ''}"):
                current = trial
            else:
                index += chunk
        if chunk == 1:
            return ordered(ops, set(current))
        chunk = max(1, chunk // 2)


def search(ops: Sequence[str], seeds: Sequence[str], passes: Verdict, mode: SearchMode = "bisect") -> SearchOutcome:
    """A small set of `ops` with which `passes` holds; `passes(())` is taken to have failed already."""
    if mode not in MODES:
        raise ValueError(mode)
    every = tuple(ops)
    if not passes(every, "every op in fp32"):
        return SearchOutcome(found=None)
    seed_set = frozenset(s for s in seeds if s in set(every))
    if seed_set and passes(ordered(every, seed_set), "seeds"):
        grown = ordered(every, seed_set)
    else:
        window = every
        if seed_set:
            after_first = every[min(every.index(s) for s in seed_set):]
            if len(after_first) < len(every) and passes(after_first, "from the first seed on"):
                window = after_first
        k = find_prefix(window, seed_set, passes, mode)
        grown = ordered(every, seed_set | set(window[:k]))
    return SearchOutcome(found=shrink(every, grown, passes), grown=grown)
