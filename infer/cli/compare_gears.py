"""`infer compare` with several --input/--actual pairs: one per gear of a dynamic model, each compared and printed
as a single compare prints it, then a line per gear and one verdict across them (exit 1 when any gear fails)."""

from __future__ import annotations

import sys
from pathlib import Path

from binio.errors import InferError
from binio.shown_path import shown_path
from infer.cli.console import out, print_json, say, warn
from infer.cli.next_steps import next_steps
from infer.compare import CompareOptions, compare_gears
from infer.contract import ModelContract


def _refuse_single_only(golden: Path | None, dump_golden: Path | None, options: CompareOptions) -> None:
    given = [flag for flag, value in (("--golden", golden), ("--dump-golden", dump_golden),
                                      ("--npu-dump", options.npu_dump), ("--layerwise", options.layerwise or None))
             if value is not None]
    if given:
        raise InferError(f"{given[0]} with several --input: it belongs to one dataset",
                         hint="compare that gear on its own (one --input) for it")


def compare_each_gear(contract: ModelContract, model: Path, inputs: list[Path], actuals: list[Path], *,
                      options: CompareOptions, golden: Path | None, report: Path | None, dump_golden: Path | None,
                      as_json: bool) -> None:
    """Compares each (--input, --actual) pair, prints each verdict and the one across them; exits 1 on a failure.
    `model`: the path the user gave (the next steps repeat it)."""
    from infer.compare._reports.folder import write_reports

    _refuse_single_only(golden, dump_golden, options)
    if len(actuals) != len(inputs):
        raise InferError(f"{len(inputs)} --input and {len(actuals)} --actual: give one run folder per dataset, in "
                         "the same order")

    def golden_run() -> None:
        say("golden outputs: running TensorFlow on the frozen pb (cached for the next compare)")

    result = compare_gears(contract, list(zip(inputs, actuals, strict=True)), options=options,
                           on_golden_run=golden_run)
    written: list[Path] = []
    if report is not None:
        for item in result.gears:
            written += write_reports(item.result, report / item.tag)
    if as_json:
        for path in written:
            say(f"wrote {shown_path(path)}")
        print_json(result.to_json())
        sys.exit(0 if result else 1)
    console = out()
    for path in written:
        console.print(f"wrote {shown_path(path)}", markup=False)
    for item in result.gears:
        for text in item.result.warnings:
            warn(f"{item.gear}: {text}")
    # Each gear as a single compare prints its verdict (one short line, what it rests on below), then the verdict
    # across them, then what to do next about the first gear that failed.
    for item in result.gears:
        console.print(f"{item.gear}: {item.result.headline()}", markup=False, soft_wrap=True)
        for line in item.result.details():
            console.print(f"  {line}", markup=False, soft_wrap=True)
    console.print(result.headline(), markup=False, soft_wrap=True)
    failing = next(((item, bins, actual) for item, bins, actual in zip(result.gears, inputs, actuals, strict=True)
                    if not item.result.passed), None)
    if failing is not None:
        item, bins, actual = failing
        for line in next_steps(item.result, contract, model, bins, actual, gear=item.gear):
            console.print(line, markup=False, soft_wrap=True)
    if not result:
        sys.exit(1)
