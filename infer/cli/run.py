"""`infer run`."""

from __future__ import annotations

from pathlib import Path

import typer

from binio.shown_path import shown_path
from infer.cli.console import batch_bar, examples, print_json, show
from infer.cli.options import takes_options
from infer.run.options import RunOptions, ScaleOptions

EXAMPLES = examples(
    "infer run model/model.json --input bins -o out",
    "infer run model/model.json --input bins -o golden --backend tf   # the frozen pb: compare's reference",
    "infer run model_dynamic/model.json --input bins_b4 -o out_b4",
)


def _ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f} ms"


@takes_options(options=RunOptions, scale=ScaleOptions)
def run(
    model: Path = typer.Argument(..., help="model.json, or an .om/.onnx/.pb next to its model.json."),
    bins: Path = typer.Option(..., "--input", "-i", help="The dataset folder (dataset.json + one folder per input)."),
    output: Path = typer.Option(..., "--output", "-o", help="Output root; the run goes into `OUT/<timestamp>/`."),
    as_json: bool = typer.Option(False, "--json", help="Print run.json's record and the run folder as JSON "
                                 "(docs/json-output.md)."),
    *,
    options: RunOptions,  # its flags and scale's: takes_options
    scale: ScaleOptions,
) -> None:
    """Run every batch of a dataset through the model, in msame's output layout.

    msame or ais_bench run an .om, ONNX Runtime the stand-in, TensorFlow the frozen pb. Every bin is checked
    against the model first. Writes `OUT/<timestamp>/<stem>_output_<i>.bin` and run.json (latency, throughput,
    whether the run completed)."""
    # on use: pulls numpy, which `infer --help` must not import (tests/test_startup.py)
    from infer.run import plan_run, run_model

    if options.dry_run:
        plan = plan_run(model, bins, output, options, scale)
        if as_json:
            print_json(plan.to_json())
            return
        show(plan.summary)
        for line in plan.lines():
            show(line)
        return
    with batch_bar("running") as progress:
        result = run_model(model, bins, output, options, scale, progress=progress)
    if as_json:
        print_json(result.to_json())
        return
    record = result.record
    throughput = "n/a" if record.throughput is None else f"{record.throughput:.1f} samples/s"
    where = record.device.removeprefix(f"{record.backend} ")  # "msame (device 0)", not "msame (msame device 0)"
    show(f"{record.backend} ({where}): {len(record.stems)} batches of {record.batch}, "
         f"{record.samples} samples ({record.padding} padding)")
    show(f"latency per batch: mean {_ms(record.latency.mean_ms)}, p50 {_ms(record.latency.p50_ms)}, "
         f"p99 {_ms(record.latency.p99_ms)}; throughput {throughput}")
    if record.scale_out is not None:
        scaled = record.scale_out
        for shard in scaled.shards:
            rate = "n/a" if shard.throughput is None else f"{shard.throughput:.1f} samples/s"
            show(f"  shard {shard.index}: {len(shard.stems)} batches on {shard.device or '?'}, {rate}"
                 + (f", {shard.attempts} attempts" if shard.attempts > 1 else ""))
        wall = "n/a" if scaled.wall_throughput is None else f"{scaled.wall_throughput:.1f} samples/s"
        resumed = f", {scaled.resumed_stems} batches already done" if scaled.resumed_stems else ""
        show(f"{scaled.shard_count} shards ({scaled.engine}): {wall} wall clock, process starts "
             f"included{resumed}")
    if record.remote is not None:  # where it ran, and what went back and forth
        show(f"ran on {record.remote.host}: {record.remote.traffic.describe()}")
    show(f"wrote {shown_path(result.folder)}")
