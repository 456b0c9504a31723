"""How much of each recurrent and attention family `compare --layerwise` compares (issue 38's figures).

    python -m tests.infer.compare.layer_coverage [--keep DIR] [--family crnn ...]

Each family (tests/infer/compare/recurrent_families.py) is frozen, converted to the stand-in (force_fp16), run on
two batches and compared layer by layer; the line per family counts the rows: compared, unmatched, skipped
(computed from a random op), and the distinct reasons of the unmatched ones.
"""

from __future__ import annotations

import argparse
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from infer.compare.layer_result import LayerwiseResult


@dataclass(frozen=True)
class Coverage:
    family: str
    rows: int
    compared: int
    unmatched: int
    skipped: int
    reasons: tuple[tuple[str, int], ...]
    passed: bool

    def line(self) -> str:
        return (f"{self.family}: {self.rows} rows, {self.compared} compared, {self.unmatched} unmatched, "
                f"{self.skipped} skipped; outputs {'PASSED' if self.passed else 'FAILED'}")


def _short(reason: str) -> str:
    return reason.split(":")[0][:70]


def coverage(family: str, layers: LayerwiseResult, passed: bool) -> Coverage:
    reasons = Counter(_short(row.unmatched_reason) for row in layers.unmatched)
    return Coverage(family=family, rows=len(layers.rows), compared=len(layers.matched), unmatched=len(layers.unmatched),
                    skipped=len(layers.skipped_random), reasons=tuple(reasons.most_common()), passed=passed)


def measure(family: str, root: Path) -> tuple[Coverage, LayerwiseResult]:
    from infer.compare._compare import CompareOptions, compare
    from infer.convert._convert import ConvertOptions, convert_model
    from infer.run import run_model
    from infer.run.options import RunOptions
    from tests.infer.compare.recurrent_families import family_bins, write_family

    folder = root / family
    contract = write_family(folder / "model", family)
    bins = family_bins(folder / "bins", contract)
    converted = convert_model(contract, ConvertOptions(target="onnx", precision_mode="force_fp16")).contract
    actual = run_model(converted.path, bins, folder / "out", RunOptions(backend="onnxrt")).folder
    result = compare(converted.path, bins, actual, options=CompareOptions(layerwise=True),
                     cache_root=folder / "golden-cache")
    assert result.layerwise is not None
    return coverage(family, result.layerwise, result.passed), result.layerwise


def main(argv: list[str] | None = None) -> None:
    from ckpt2pb.logs import quiet_tensorflow_logs
    from tests.infer.compare.recurrent_families import FAMILIES

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, default=None, help="build in this folder and keep it")
    parser.add_argument("--family", action="append", choices=sorted(FAMILIES), help="only these families")
    parser.add_argument("--rows", action="store_true", help="print every row")
    args = parser.parse_args(argv)
    quiet_tensorflow_logs()
    with tempfile.TemporaryDirectory() as scratch:
        root = args.keep or Path(scratch)
        for family in args.family or list(FAMILIES):
            found, layers = measure(family, root)
            print(found.line())
            for reason, count in found.reasons:
                print(f"    {count:3d} unmatched: {reason}")
            if args.rows:
                for row in layers.rows:
                    print(f"      {row.tensor:50s} {row.op_type:16s} {'ok ' if row.matched else '-- '}"
                          f"{row.note()[:110]}")


if __name__ == "__main__":
    main()
