"""`infer compare` over several datasets of one model, each with its run (one per gear of a dynamic model): every
pair compared as a single compare would, then one verdict across them. Two datasets of one gear are refused (the
summary would count it twice), and so is a dataset that is no gear of the model, before anything is compared."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from binio.manifest import load_manifest
from infer.compare._compare import compare
from infer.compare.errors import CompareError
from infer.compare.gears_result import GearComparison, GearsCompareResult
from infer.compare.options import CompareOptions, CompareProgress
from infer.contract import ModelContract, as_contract
from infer.gear_check import check_dataset_gear


def compare_gears(model: ModelContract | Path | str, pairs: Sequence[tuple[Path, Path]], *,
                  options: CompareOptions | None = None, on_golden_run: Callable[[], None] | None = None,
                  progress: CompareProgress | None = None) -> GearsCompareResult:
    """Each (dataset, run folder) of `pairs` compared against the model's golden outputs; the verdict across."""
    contract = as_contract(model)
    labels: dict[str, Path] = {}
    tags: list[str] = []
    for bins, _ in pairs:
        manifest = load_manifest(bins)
        check_dataset_gear(manifest, contract.gears)
        label = manifest.gear_label or Path(bins).name  # a static model's datasets go by their folders
        if label in labels:
            raise CompareError(f"--input {bins}: {label} again (--input {labels[label]} is that gear too); compare "
                               "one dataset per gear", hint="drop one of them, or compare them one at a time")
        labels[label] = bins
        tags.append(manifest.gear_tag or Path(bins).name)
    return GearsCompareResult(tuple(
        GearComparison(gear=label, result=compare(contract, bins, actual, options=options,
                                                  on_golden_run=on_golden_run, progress=progress), tag=tag)
        for label, tag, (bins, actual) in zip(labels, tags, pairs, strict=True)))
