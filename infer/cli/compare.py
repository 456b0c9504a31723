"""`infer compare`."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import typer

from infer.cli.console import out, say

# The terminal table's metric columns: short header -> msaccucmp's name.
_COLUMNS = {"cosine": "CosineSimilarity", "RED": "RelativeEuclideanDistance", "KL": "KullbackLeiblerDivergence",
            "RMSE": "RootMeanSquareError", "MeanRE": "MeanRelativeError", "MaxAbsErr": "MaxAbsoluteError",
            "allclose": "AllclosePassRate"}


def compare(
    model: Path = typer.Argument(..., help="model.json of the converted model."),
    bins: Path = typer.Option(..., "--input", "-i", help="The dataset folder the outputs were computed from."),
    actual: Path = typer.Option(..., "--actual", "-a", help="The converted model's run folder, `OUT/<timestamp>`."),
    golden: Path | None = typer.Option(None, "--golden", "-g",
                                       help="TensorFlow's run folder; default: run the frozen pb (cached)."),
    labels: Path | None = typer.Option(None, "--labels", help="0-based class indices, one per sample (.txt or .npy)."),
    topk: int = typer.Option(5, "--topk", help="k for top-k overlap and accuracy of classifier outputs."),
    threshold: list[str] = typer.Option([], "--threshold", "-t",
                                        help="metric=value or output:metric=value (value 'off' lifts it)."),
    atol: float = typer.Option(1e-4, "--atol", help="Absolute tolerance of the allclose pass rate."),
    rtol: float = typer.Option(1e-3, "--rtol", help="Relative tolerance of the allclose pass rate."),
    report: Path | None = typer.Option(None, "--report", "-r", help="Write report.json, .csv and .html here."),
    layerwise: bool = typer.Option(False, "--layerwise",
                                   help="Compare every intermediate tensor on one batch (ONNX stand-in)."),
    dump_golden: Path | None = typer.Option(None, "--dump-golden",
                                            help="Write TF's intermediate tensors in msaccucmp's golden naming."),
    workers: int = typer.Option(1, "--workers", help="Processes for golden outputs and metrics."),
    force: bool = typer.Option(False, "--force", help="Replace the reports in an existing --report folder."),
) -> None:
    """Compare the converted model's outputs with TensorFlow's, with the metrics of Ascend's accuracy tools.

    The metrics of msaccucmp / msit compare, per output, per batch and over the dataset (padding rows left
    out). Fails (exit 1) on msit's rule: cosine < 0.99, RED > 0.05, KL > 0.005, RMSE > 1.0 or MeanRE > 1.0;
    the last line says PASSED, or FAILED with the failing output and metric."""
    if workers < 1:
        from binio.errors import InferError

        raise InferError(f"--workers {workers}: expected 1 or more")
    with contextlib.ExitStack() as stack:
        if report is not None:  # checked and locked before the comparison runs: a refusal should not take minutes
            from infer.compare.reports import report_folder

            stack.enter_context(report_folder(report, force=force))
        _compare(model, bins, actual, golden, labels, topk, threshold, atol, rtol, report, layerwise, dump_golden,
                 workers)


def _compare(model: Path, bins: Path, actual: Path, golden: Path | None, labels: Path | None, topk: int,
             threshold: list[str], atol: float, rtol: float, report: Path | None, layerwise: bool,
             dump_golden: Path | None, workers: int) -> None:
    from rich.table import Table

    from infer.compare.compare import CompareOptions
    from infer.compare.compare import compare as run_compare
    from infer.compare.metrics import shown
    from infer.compare.thresholds import Thresholds

    options = CompareOptions(thresholds=Thresholds.parse(threshold), atol=atol, rtol=rtol, topk=topk, labels=labels,
                             workers=workers)

    def golden_run() -> None:
        say("golden outputs: running TensorFlow on the frozen pb (cached for the next compare)")

    result = run_compare(model, bins, actual, golden=golden, options=options, layerwise=layerwise,
                         dump_golden=dump_golden, on_golden_run=golden_run)
    console = out()
    if not console.is_terminal:
        console.width = max(console.width, 160)  # a pipe or a log file: never cut numbers to fit 80 columns
    table = Table(title=f"{result.samples} samples, {result.padding} padding rows left out", title_justify="left")
    for column in ("output", *_COLUMNS, "NaN/inf", "fp16", "result"):
        table.add_column(column, justify="left" if column == "output" else "right")
    for output in result.outputs:
        m = output.metrics
        table.add_row(output.name, *(shown(m.value(name), name) for name in _COLUMNS.values()),
                      str(m.counts.nan_actual + m.counts.inf_actual), "overflow" if m.counts.fp16_overflow else "ok",
                      "pass" if output.passed else "FAIL")
    console.print(table)
    for output in result.outputs:
        failing_batches = sum(1 for b in output.batches if b.failures)
        if failing_batches:
            console.print(f"{output.name}: {failing_batches} of {len(output.batches)} batches fail on their own",
                          markup=False)
        if output.topk is not None:
            t = output.topk
            line = f"{output.name}: top-1 agreement {t.top1_agreement:.2%}, top-{t.k} overlap {t.topk_overlap:.2%}"
            if t.accuracy is not None:
                a = t.accuracy
                line += (f"; top-1 accuracy golden {a.golden_top1:.2%} actual {a.actual_top1:.2%} "
                         f"({a.top1_difference:+.2%}), top-{t.k} golden {a.golden_topk:.2%} actual "
                         f"{a.actual_topk:.2%} ({a.topk_difference:+.2%})")
            console.print(line, markup=False)
    if result.layerwise is not None:
        layers = Table(title=f"layer by layer, batch {result.layerwise.batch_stem}", title_justify="left")
        for column in ("tensor", "op", "cosine", "MaxAbsErr", "RED", ""):
            layers.add_column(column, justify="left" if column in ("tensor", "op", "") else "right")
        for row in result.layerwise.rows:
            if row.metrics is None:
                layers.add_row(row.tensor, row.op_type, "", "", "", f"unmatched: {row.unmatched_reason}")
            else:
                mark = "<- first below threshold" if row.first_failing else ("fail" if row.failures else "")
                layer = row.metrics
                layers.add_row(row.tensor, row.op_type, shown(layer.cosine_similarity, "CosineSimilarity"),
                               shown(layer.max_absolute_error), shown(layer.relative_euclidean_distance),
                               mark)
        console.print(layers)
        first = result.layerwise.first_failing
        console.print(f"first tensor below threshold: {first.tensor if first else 'none'}", markup=False)
    if result.dumped_golden:
        console.print(f"golden dump (msaccucmp naming): {result.dumped_golden}", markup=False)
    if report is not None:
        from infer.compare.reports import write_reports

        for path in write_reports(result, report):
            console.print(f"wrote {path}", markup=False)
    console.print(result.verdict(), markup=False)
    if not result:
        sys.exit(1)
