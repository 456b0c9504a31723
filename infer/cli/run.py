"""`infer run`."""

from __future__ import annotations

from pathlib import Path

import typer

from infer.cli.console import batch_bar, show


def _ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f} ms"


def run(
    model: Path = typer.Argument(..., help="model.json, or an .om/.onnx/.pb next to its model.json."),
    bins: Path = typer.Option(..., "--input", "-i", help="The dataset folder (dataset.json + one folder per input)."),
    output: Path = typer.Option(..., "--output", "-o", help="Output root; the run goes into `OUT/<timestamp>/`."),
    backend: str | None = typer.Option(None, "--backend", "-b",
                                       help="onnxrt | tf | msame | ais_bench; default: from what convert made."),
    device: int | None = typer.Option(None, "--device", help="NPU (msame/ais_bench) or GPU (onnxrt) index."),
    loop: int = typer.Option(1, "--loop", help="Run each batch this many times; latency is their mean."),
    warmup: int = typer.Option(1, "--warmup", help="Untimed runs of the first batch before timing starts."),
    threads: int | None = typer.Option(None, "--threads", help="Intra-op threads (onnxrt, tf)."),
    devices: str | None = typer.Option(None, "--devices",
                                       help="Shard the batches over these devices, e.g. 0,1,2,3 (one process each)."),
    shards: int | None = typer.Option(None, "--shards", help="Shards to cut (default: one per device or Ray slot)."),
    engine: str = typer.Option("local", "--engine", help="local | ray: where the shards run."),
    address: str | None = typer.Option(None, "--address", help="Ray cluster address (default: start a local Ray)."),
    retries: int = typer.Option(1, "--retries", help="Further attempts of a failed shard (sharded runs)."),
    resume: bool = typer.Option(False, "--resume",
                                help="Finish the newest unfinished run of this model and dataset under -o."),
    timeout: float = typer.Option(3600.0, "--timeout",
                                  help="Seconds msame or ais_bench may take for the whole dataset; then they are "
                                       "stopped, with every process they started."),
) -> None:
    """Run every batch of a dataset through the model, in msame's output layout.

    msame or ais_bench run an .om, ONNX Runtime the stand-in, TensorFlow the frozen pb. Every bin is checked
    against the model first. Writes `OUT/<timestamp>/<stem>_output_<i>.bin` and run.json (latency, throughput,
    whether the run completed)."""
    # on use: pulls numpy, which `infer --help` must not import (tests/test_startup.py)
    from infer.run import run_model
    from infer.run.options import RunOptions, ScaleOptions, parse_devices

    options = RunOptions(backend=backend, device=device, loop=loop, warmup=warmup, threads=threads, timeout=timeout)
    scale = ScaleOptions(devices=parse_devices(devices) if devices is not None else (), shards=shards,
                         engine=engine, address=address, retries=retries, resume=resume)
    with batch_bar("running") as progress:
        result = run_model(model, bins, output, options, scale, progress=progress)
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
    show(f"wrote {result.folder}")
