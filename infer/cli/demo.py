"""`infer demo`."""

from __future__ import annotations

from pathlib import Path

import typer

from binio.shown_path import shown_path, shown_paths
from infer.cli.console import examples, show

EXAMPLES = examples(
    "infer demo -o demo-out",
    "infer demo --fp16-trouble -o demo-out        # a failure, its cause, and its fix",
    "infer demo --aipp -o demo-out                # the NPU's AIPP does the preprocessing",
)


def demo(
    output: Path = typer.Option(Path("demo-out"), "--output", "-o", help="The folder the demo writes into."),
    aipp: bool = typer.Option(False, "--aipp", help="The AIPP variant: [convert] aipp = true, the model takes "
                              "uint8 images and the NPU (the stand-in's AIPP stage) does the preprocessing."),
    fp16_trouble: bool = typer.Option(False, "--fp16-trouble", help="The failure workflow: a model whose "
                                      "force_fp16 conversion overflows inside; compare fails and --layerwise names "
                                      "the op, tune-precision finds the ops to keep in fp32, and the pipeline run "
                                      "again with its keep_dtype file passes."),
) -> None:
    """Run every stage on a built-in example model and image set, and print the verdict.

    Builds a small ResNet-style TF1 checkpoint (seeded) and a labelled image set in OUTPUT, writes them a
    pipeline.toml, then runs inspect -> freeze -> convert (ATC where installed, else the ONNX Runtime stand-in
    with force_fp16, ATC's default) -> dump-bin -> run -> compare: one line per stage, then the verdict and the
    HTML report's path. Exit 1 when compare fails.
    """
    # on use: pulls numpy, which `infer --help` must not import (tests/test_startup.py)
    from infer.demo._run import run_demo

    result = run_demo(output, on_step=lambda line: show(shown_paths(line)),
                      on_stage=lambda outcome: show(shown_paths(outcome.line())), aipp=aipp,
                      fp16_trouble=fp16_trouble)
    pipeline = result.pipeline
    for line in pipeline.verdict_lines():
        show(line)
    if result.failed_report is not None:
        show(f"report under force_fp16 (failed): {shown_path(result.failed_report)}")
    if pipeline.report_html is not None:
        show(f"report: {shown_path(pipeline.report_html)}")
    show(f"re-run or edit: infer pipeline run {shown_path(result.pipeline_file)}  "
         f"(commands: {shown_path(pipeline.report_path)})")
    if not pipeline.passed:
        raise typer.Exit(1)
