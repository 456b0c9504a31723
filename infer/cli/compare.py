"""`infer compare`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer

from binio.errors import InferError
from binio.shown_path import shown_path
from infer.cli.console import err, examples, out, print_json, say, warn
from infer.cli.next_steps import next_steps
from infer.cli.options import takes_options
from infer.compare.options import CompareOptions

EXAMPLES = examples(
    "infer compare model/model.json --input bins --actual out --labels labels.txt --report report",
    "infer compare model/model.json --input bins --actual out --golden golden --layerwise   # where it diverges",
)


@takes_options(options=CompareOptions)
def compare(
    ctx: typer.Context,
    model: Path = typer.Argument(..., help="model.json of the converted model."),
    inputs: list[Path] = typer.Option(..., "--input", "-i", help="The dataset folder the outputs were computed "
                                      "from; repeat it with --actual, one pair per gear, to compare every gear of "
                                      "a dynamic model and get one verdict across them."),
    actuals: list[Path] | None = typer.Option(None, "--actual", "-a", help="The converted model's outputs: infer "
                                              "run's folder, or what msame, ais_bench or the ModelZoo benchmark "
                                              "wrote (OUT or OUT/<timestamp>; .bin, .txt, .npy), read with the om's "
                                              "dtypes; one per --input, in order; with --npu-dump, default: the "
                                              "run folder holding the dump."),
    golden: Path | None = typer.Option(None, "--golden", "-g",
                                       help="TensorFlow's run folder; default: run the frozen pb (cached)."),
    report: Path | None = typer.Option(None, "--report", "-r", help="Write report.json, .csv and .html here."),
    dump_golden: Path | None = typer.Option(None, "--dump-golden",
                                            help="Write TF's intermediate tensors in msaccucmp's golden naming."),
    force: bool = typer.Option(False, "--force", help="Replace the reports in an existing --report folder; write "
                                                      "into an existing --dump-golden folder."),
    as_json: bool = typer.Option(False, "--json", help="Print report.json's document instead of the tables "
                                 "(docs/json-output.md); the exit code is the same."),
    *,
    options: CompareOptions,  # its flags: takes_options
) -> None:
    """Compare the converted model's outputs with TensorFlow's, with the metrics of Ascend's accuracy tools.

    The metrics of msaccucmp / msit compare, per output, per batch and over the dataset (padding rows left
    out). Fails (exit 1) on msit's rule: cosine < 0.99, RED > 0.05, KL > 0.005, RMSE > 1.0 or MeanRE > 1.0;
    the verdict is one short line, PASSED, or FAILED with its cause where the outputs show one (fp16 overflow or
    underflow inside the network) and the failing output and metric; below it every reason, what was compared with
    what and the worst sample, and for a failed run the next step. Every sample is also measured on its own;
    --threshold sample:cosine=0.99 fails the run on one bad sample. For an om the lines name the chip the om names,
    and say when its float32 outputs lie on the fp16 grid."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeRemainingColumn

    # on use: pulls numpy, which `infer --help` must not import (tests/test_startup.py)
    from infer.cli.compare_table import metrics_table
    from infer.compare import compare_outputs
    from infer.compare.metric_names import shown_limit
    from infer.contract import load_contract

    if report is not None:  # checked, and locked until the command ends, before the comparison runs
        # on use: pulls numpy, which `infer --help` must not import (tests/test_startup.py)
        from infer.compare._reports.folder import report_folder

        ctx.with_resource(report_folder(report, force=force))

    contract = load_contract(model)  # once: the comparison and the signature keys shown below
    if len(inputs) > 1:
        # on use: pulls numpy, which `infer --help` must not import (tests/test_startup.py)
        from infer.cli.compare_gears import compare_each_gear

        compare_each_gear(contract, model, inputs, actuals or [], options=options, golden=golden, report=report,
                          dump_golden=dump_golden, as_json=as_json)
        return
    bins = inputs[0]
    if actuals is not None and len(actuals) > 1:
        raise InferError(f"--actual given {len(actuals)} times for one --input: give one run folder per dataset")
    actual = actuals[0] if actuals else None
    if actual is None:
        # on use: pulls numpy, which `infer --help` must not import (tests/test_startup.py)
        from infer.compare import run_folder_of_dump

        actual = run_folder_of_dump(options.npu_dump)

    def golden_run() -> None:
        say("golden outputs: running TensorFlow on the frozen pb (cached for the next compare)")

    status = err()
    # A bar on a terminal only: a transient bar still leaves an empty line on a redirected stderr.
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                  console=status, transient=True, disable=not status.is_terminal) as bar:
        tasks: dict[str, TaskID] = {}

        def progress(what: str, done: int, total: int) -> None:
            if what not in tasks:
                label = {"golden": "golden (TensorFlow)", "emulated": "emulated precision",
                         "fp32": "the same conversion in fp32"}.get(what, f"reading {what}")
                tasks[what] = bar.add_task(label, total=total)
            bar.update(tasks[what], completed=done, total=total)

        result = compare_outputs(contract, bins, actual, golden=golden, options=options, dump_golden=dump_golden,
                                 on_golden_run=golden_run, progress=progress, force=force)
    if as_json:
        if report is not None:
            # on use: pulls numpy, which `infer --help` must not import (tests/test_startup.py)
            from infer.compare._reports.folder import write_reports

            for path in write_reports(result, report):
                say(f"wrote {shown_path(path)}")
        print_json(result.to_json())
        sys.exit(0 if result else 1)
    console = out()
    width = console.width if console.is_terminal else None  # a pipe or a log file: the table whole
    keys = contract.signature_keys
    named = [f"{keys[o.name]} = {o.name}" for o in result.outputs if o.name in keys]
    if named:  # a SavedModel's outputs: the graph's names (Identity_1:0) are not the ones its users know
        console.print(f"signature keys: {', '.join(named)}", markup=False, soft_wrap=True)
    for line in metrics_table(result, width):
        console.print(line, markup=False, soft_wrap=True)
    for output in result.outputs:
        failing_batches = sum(1 for b in output.batches if b.failures)
        if failing_batches:
            console.print(f"{output.name}: {failing_batches} of {len(output.batches)} batches fail on their own",
                          markup=False)
        if output.failing_samples:
            limits = ", ".join(f"{name} {shown_limit(limit)}" for name, limit in output.sample_limits.items())
            console.print(f"{output.name}: {result.failing_count(output)} (per-sample limits: {limits}); worst: "
                          f"{output.worst_failing.describe() if output.worst_failing else ''}", markup=False)
        if output.topk is not None:
            t = output.topk
            line = f"{output.name}: top-1 agreement {t.top1_agreement:.2%}, top-{t.k} overlap {t.topk_overlap:.2%}"
            if t.without_top1:
                line += (f" ({t.without_top1} of {t.samples} samples rank no class above another, their scores NaN "
                         "or all the same: no top-1)")
            if t.accuracy is not None:
                a = t.accuracy
                line += (f"; top-1 accuracy golden {a.golden_top1:.2%} actual {a.actual_top1:.2%} "
                         f"({a.top1_difference:+.2%}), top-{t.k} golden {a.golden_topk:.2%} actual "
                         f"{a.actual_topk:.2%} ({a.topk_difference:+.2%})")
            console.print(line, markup=False)
    if result.layerwise is not None:
        _print_layers(console, result.layerwise)
    if result.dumped_golden:
        console.print(f"golden dump (msaccucmp naming): {result.dumped_golden}", markup=False)
    if report is not None:
        # on use: pulls numpy, which `infer --help` must not import (tests/test_startup.py)
        from infer.compare._reports.folder import write_reports

        for path in write_reports(result, report):
            console.print(f"wrote {shown_path(path)}", markup=False)
    for check in result.preprocessing:
        console.print(check.summary(), markup=False)
    if result.provenance is not None:
        for order in result.provenance.sample_order:
            console.print(f"sample order: {order.describe()}", markup=False)
    for text in result.warnings:
        warn(text)
    # The verdict in one short line, then what it rests on, then what to do next.
    console.print(result.headline(), markup=False, soft_wrap=True)
    for line in result.details():
        console.print(f"  {line}", markup=False, soft_wrap=True)
    for line in next_steps(result, contract, model, bins, actual):
        console.print(line, markup=False, soft_wrap=True)
    if not result:
        sys.exit(1)


def _print_layers(console: Any, layers: Any) -> None:
    """The layer-by-layer table and its diagnosis lines."""
    # on use: pulls numpy, which `infer --help` must not import (tests/test_startup.py)
    from infer.cli.layer_table import layer_table
    from infer.compare._layers.bands import BAND_FLOOR
    from infer.compare.metric_names import shown

    width = console.width if console.is_terminal else None  # a pipe or a log file: the table whole
    for line in layer_table(layers, width):
        console.print(line, markup=False, soft_wrap=True)
    first = layers.diverges_at
    console.print(f"first tensor to diverge: {first.tensor if first else 'none'}"
                  + (f" ({first.op_type})" if first else "")
                  + (f", {first.npu_op_text}" if first is not None and first.npu_op else ""), markup=False)
    if layers.bands is not None:
        bands = layers.bands
        console.print(f"judged against each tensor's expected-error band: the RED {bands.precision_mode} explains "
                      f"there (the stand-in's emulation of an undamaged conversion, at least {shown(BAND_FLOOR)}); "
                      f"out of it past {bands.factor:g}x; the mark where the excess jumps (the words: "
                      "docs/compare.md#words-the-verdict-uses)", markup=False)
    elif layers.band_note:
        console.print(f"{layers.band_note}: judged by msit's limits", markup=False)
    if len(layers.origins) > 1:
        console.print(f"diverging independently (each with every compared input passing): "
                      f"{', '.join(layers.origins)}", markup=False)
    growth = layers.growth_text()  # only where it means something
    if growth:
        console.print(growth, markup=False)
    if layers.nonfinite is not None:
        console.print(f"first inf/NaN: {layers.nonfinite.describe()}", markup=False)
    if layers.fed_from_dump:
        console.print("fed to TensorFlow from the NPU dump (the device's random draws): "
                      + ", ".join(layers.fed_from_dump), markup=False)
    if layers.skipped_random:
        console.print("not compared (computed from random ops): "
                      + ", ".join(r.tensor for r in layers.skipped_random), markup=False)
    if layers.note:
        console.print(layers.note, markup=False)
