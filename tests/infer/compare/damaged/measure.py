"""How `infer compare --layerwise` does on the corpus: per case the family, the damage, the expected layer, the
marked one and whether they agree; then the totals (exact rate, marks on healthy models).

    python -m tests.infer.compare.damaged.measure [--keep DIR]

Each case is run as a user would: `infer.run_model` on the damaged conversion (ONNX Runtime), then
`infer.compare_outputs` with `layerwise=True` and `expected_from_emulation=True` (the precision mode's band). A
mark is exact when the first tensor marked (a plain mark or a PASSED run's warning) is one of the case's expected
tensors. `below` says whether the damaged layer's own tensor stayed within cosine 0.99 and RED 0.05."""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from infer.compare.result import CompareResult
from tests.infer.compare.damaged.cases import CASES, PRECISION_MODES, BuiltCase, Corpus, CorpusCase
from tests.infer.compare.damaged.families import FAMILIES

COSINE_LIMIT, RED_LIMIT = 0.99, 0.05  # msit's per-tensor limits, which --layerwise judges intermediates by


@dataclass(frozen=True)
class Outcome:
    name: str
    family: str
    precision_mode: str
    damage: str  # "" for a healthy model
    expected: tuple[str, ...]  # () for a healthy model
    marked: str  # the first tensor marked ("" where none)
    warning: bool  # the mark is a PASSED run's warning
    passed: bool  # msit's verdict on the outputs
    band_flagged: bool  # an output's error beyond what the precision mode explains
    layer_cosine: float  # at the expected layer (nan where it was not compared)
    layer_red: float
    subtle: bool = False

    @property
    def expected_layer(self) -> str:
        return self.expected[0] if self.expected else ""

    @property
    def exact(self) -> bool:
        return bool(self.marked) and self.marked in self.expected

    @property
    def below_limits(self) -> bool:
        return self.layer_cosine >= COSINE_LIMIT and self.layer_red <= RED_LIMIT


def compared(built: BuiltCase, out: Path) -> CompareResult:
    """The converted model run, then compared layer by layer, as `infer run` and `infer compare --layerwise
    --expected-from-emulation` do."""
    import infer

    actual = infer.run_model(built.contract, built.bins, out / "run", infer.RunOptions(backend="onnxrt")).folder
    return infer.compare_outputs(built.contract, built.bins, actual, cache_root=out / "cache",
                                 options=infer.CompareOptions(layerwise=True, expected_from_emulation=True))


def outcome(name: str, family: str, mode: str, result: CompareResult, case: CorpusCase | None = None) -> Outcome:
    layers = result.layerwise
    assert layers is not None
    first = layers.first_failing
    expected = case.expected if case is not None else ()
    rows = {row.tensor: row for row in layers.rows}
    metrics = next((rows[t].metrics for t in expected if t in rows and rows[t].metrics is not None), None)
    return Outcome(
        name=name, family=family, precision_mode=mode, damage=case.damage.description if case else "",
        expected=expected, marked=first.tensor if first is not None else "", warning=layers.is_warning,
        passed=result.passed, band_flagged=any(e.flagged for e in result.expected),
        layer_cosine=metrics.cosine_similarity if metrics else float("nan"),
        layer_red=metrics.relative_euclidean_distance if metrics else float("nan"),
        subtle=case.subtle if case else False)


def measure(root: Path, cases: tuple[CorpusCase, ...] = CASES) -> tuple[list[Outcome], list[Outcome]]:
    """(the damaged cases' outcomes, the healthy models' outcomes), everything built under `root`."""
    corpus = Corpus(root)
    healthy = []
    for family in FAMILIES:
        for mode in PRECISION_MODES:
            result = compared(corpus.healthy(family, mode), root / "out" / f"healthy-{family}-{mode}")
            healthy.append(outcome(f"{family}-healthy-{mode}", family, mode, result))
    damaged = [outcome(case.name, case.family, case.precision_mode,
                       compared(corpus.build(case), root / "out" / case.name), case) for case in cases]
    return damaged, healthy


def report_lines(damaged: list[Outcome], healthy: list[Outcome]) -> Iterator[str]:
    yield (f"{'case':34} {'mode':10} {'damage':34} {'expected':22} {'marked':22} exact verdict band "
           "layer-cos layer-RED below")
    for o in [*damaged, *healthy]:
        mark = (o.marked or "-") + (" (warn)" if o.warning else "")
        exact = "-" if not o.expected else ("yes" if o.exact else "NO")
        below = "" if not o.expected else ("yes" if o.below_limits else "no")
        yield (f"{o.name:34} {o.precision_mode:10} {o.damage or 'none':34} {(o.expected or ('-',))[0]:22} "
               f"{mark:22} {exact:5} {'PASS' if o.passed else 'FAIL':7} {'FLAG' if o.band_flagged else '-':4} "
               f"{o.layer_cosine:9.6f} {o.layer_red:9.5f} {below}")
    exact_count = sum(o.exact for o in damaged)
    below_limits = [o for o in damaged if o.below_limits]
    yield ""
    yield f"cases: {len(damaged)} across {len({o.family for o in damaged})} families"
    yield f"exact marks: {exact_count}/{len(damaged)} ({exact_count / max(len(damaged), 1):.0%})"
    yield (f"below msit's per-tensor limits at the damaged layer: {len(below_limits)} "
           f"(exact {sum(o.exact for o in below_limits)}); declared subtle: {sum(o.subtle for o in damaged)}")
    yield f"no mark at all: {sum(not o.marked for o in damaged)}"
    yield (f"damaged but PASSED: {sum(o.passed for o in damaged)} "
           f"(flagged by the band: {sum(o.passed and o.band_flagged for o in damaged)})")
    yield f"healthy models marked: {sum(bool(o.marked) for o in healthy)}/{len(healthy)}"
    yield f"healthy models failing or flagged: {sum(not o.passed or o.band_flagged for o in healthy)}/{len(healthy)}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.infer.compare.damaged.measure", description=__doc__)
    parser.add_argument("--keep", type=Path, help="build the corpus in this (new) folder and keep it")
    parser.add_argument("--case", action="append", default=[], help="only this case (repeatable)")
    args = parser.parse_args(argv)
    cases = tuple(c for c in CASES if not args.case or c.name in args.case)
    with tempfile.TemporaryDirectory(prefix="damaged-corpus-") as scratch:
        damaged, healthy = measure(args.keep or Path(scratch), cases)
    for line in report_lines(damaged, healthy):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
