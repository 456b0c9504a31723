"""How `infer compare --layerwise` does on the corpus: per case the family, the damage, the expected layer, the
marked one and whether they agree; then the totals (exact rate, marks on healthy models).

    python -m tests.infer.compare.damaged.measure [--keep DIR]

Each case is run as a user would: `infer.run_model` on the damaged conversion (ONNX Runtime), then
`infer.compare_outputs` with `layerwise=True` and `expected_from_emulation=True` (the precision mode's band). A
mark is exact when the first tensor marked (a plain mark or a PASSED run's warning) is one of the case's expected
tensors. `layer-cos`, `layer-RED`: the damage at its own layer, TensorFlow against the damaged ONNX node on the first
batch (`layer_error.py`, independent of the diagnosis); `below`: within cosine 0.99 and RED 0.05 there; `band-ratio`
is the output's error over what the precision mode's emulation explains (the band flags past 10)."""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from infer.compare.result import CompareResult
from tests.infer.compare.damaged.cases import CASES, PRECISION_MODES, ROUNDED_OTHERWISE, BuiltCase, Corpus, CorpusCase
from tests.infer.compare.damaged.families import FAMILIES
from tests.infer.compare.damaged.layer_error import damage_at_its_layer

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
    layer_cosine: float  # TF against the damaged ONNX node, at the damaged layer (nan: a control)
    layer_red: float
    output_red: float  # the model output's RED against TensorFlow
    band_ratio: float  # its error over what the precision mode's emulation explains (the larger of RMSE, 1-cosine)
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


def compared(built: BuiltCase, out: Path, cache: Path) -> CompareResult:
    """The converted model run, then compared layer by layer, as `infer run` and `infer compare --layerwise
    --expected-from-emulation` do. `cache` holds the golden and emulated runs, keyed by the pb, the dataset and
    the precision settings, so every case of one family and mode shares them (the damage is in the ONNX model)."""
    import infer

    actual = infer.run_model(built.contract, built.bins, out / "run", infer.RunOptions(backend="onnxrt")).folder
    return infer.compare_outputs(built.contract, built.bins, actual, cache_root=cache,
                                 options=infer.CompareOptions(layerwise=True, expected_from_emulation=True))


def outcome(name: str, family: str, mode: str, result: CompareResult, case: CorpusCase | None = None,
            at_layer: tuple[float, float] = (math.nan, math.nan)) -> Outcome:
    """The case's outcome from its comparison; `at_layer` is (cosine, RED) of the damage at its own layer."""
    layers = result.layerwise
    assert layers is not None
    first = layers.diverges_at
    expected = case.expected if case is not None else ()
    return Outcome(
        name=name, family=family, precision_mode=mode, damage=case.damage.description if case else "",
        expected=expected, marked=first.tensor if first is not None else "", warning=layers.is_warning,
        passed=result.passed, band_flagged=any(e.flagged for e in result.expected),
        layer_cosine=at_layer[0], layer_red=at_layer[1],
        output_red=max(o.metrics.relative_euclidean_distance for o in result.outputs),
        band_ratio=max((max(e.rmse_ratio, e.cosine_ratio) for e in result.expected), default=float("nan")),
        subtle=case.subtle if case else False)


@dataclass(frozen=True)
class Measurement:
    damaged: list[Outcome]
    healthy: list[Outcome]  # each family's conversions, undamaged
    rounded_otherwise: list[Outcome]  # healthy, their fp16 weights one step off (controls: nothing to mark)


def measure(root: Path, cases: tuple[CorpusCase, ...] = CASES) -> Measurement:
    """Every case, healthy conversion and control built and compared under `root`."""
    corpus, cache = Corpus(root), root / "cache"
    healthy = []
    for family in FAMILIES:
        for mode in PRECISION_MODES:
            result = compared(corpus.healthy(family, mode), root / "out" / f"healthy-{family}-{mode}", cache)
            healthy.append(outcome(f"{family}-healthy-{mode}", family, mode, result))

    def built(case: CorpusCase) -> Outcome:
        damaged = corpus.build(case)
        at_layer = (math.nan, math.nan)
        if case.expected:
            assert damaged.contract.converted_path is not None
            at_layer = damage_at_its_layer(damaged.contract.pb_path, damaged.contract.converted_path,
                                           case.damage.layer, case.expected_layer,
                                           FAMILIES[case.family].input_tensor, corpus.first_batch(case.family))
        return outcome(case.name, case.family, case.precision_mode,
                       compared(damaged, root / "out" / case.name, cache), case, at_layer)

    return Measurement([built(case) for case in cases], healthy, [built(case) for case in ROUNDED_OTHERWISE])


def report_lines(measured: Measurement) -> Iterator[str]:
    damaged, healthy, controls = measured.damaged, measured.healthy, measured.rounded_otherwise
    yield (f"{'case':38} {'mode':10} {'damage':30} {'expected':22} {'marked':22} exact verdict band "
           "layer-cos layer-RED below out-RED band-ratio")
    for o in [*damaged, *healthy, *controls]:
        mark = (o.marked or "-") + (" (warn)" if o.warning else "")
        exact = "-" if not o.expected else ("yes" if o.exact else "NO")  # a control expects nothing
        below = "" if not o.expected else ("yes" if o.below_limits else "no")
        yield (f"{o.name:38} {o.precision_mode:10} {o.damage or 'none':30} {(o.expected or ('-',))[0]:22} "
               f"{mark:22} {exact:5} {'PASS' if o.passed else 'FAIL':7} {'FLAG' if o.band_flagged else '-':4} "
               f"{o.layer_cosine:9.6f} {o.layer_red:9.5f} {below:5} {o.output_red:7.5f} {o.band_ratio:10.3g}")
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
    marked, flagged = sum(bool(o.marked) for o in controls), sum(not o.passed or o.band_flagged for o in controls)
    yield (f"healthy models rounded otherwise (fp16 weights one step off): marked {marked}/{len(controls)}, "
           f"failing or flagged {flagged}/{len(controls)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.infer.compare.damaged.measure", description=__doc__)
    parser.add_argument("--keep", type=Path, help="build the corpus in this (new) folder and keep it")
    parser.add_argument("--case", action="append", default=[], help="only this case (repeatable)")
    args = parser.parse_args(argv)
    cases = tuple(c for c in CASES if not args.case or c.name in args.case)
    with tempfile.TemporaryDirectory(prefix="damaged-corpus-") as scratch:
        measured = measure(args.keep or Path(scratch), cases)
    for line in report_lines(measured):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
