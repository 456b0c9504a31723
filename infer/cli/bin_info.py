"""`infer bin-info`."""

from __future__ import annotations

from pathlib import Path

import typer

from infer.bin_info.options import BinInfoOptions
from infer.cli.console import examples, print_json, show
from infer.cli.options import takes_options

EXAMPLES = examples(
    "infer bin-info bins --verify                   # re-check every size and digest",
    "infer bin-info bins --to-npy exported/",
)


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.6g}"


@takes_options(options=BinInfoOptions)
def bin_info(
    path: Path = typer.Argument(..., help="A .bin file, a dump-bin dataset folder, or an NPU dump file or folder."),
    as_json: bool = typer.Option(False, "--json", help="Print the findings as JSON."),
    *,
    options: BinInfoOptions,  # its flags: takes_options
) -> None:
    """Show a .bin file or a dataset: shape, dtype, min/max/mean, NaN and inf counts.

    --verify re-checks every size and digest; --to-npy exports (padding rows dropped). An NPU dump file (or a
    folder of them): each op's inputs and outputs, their NPU layouts turned back into TensorFlow's by the om's
    origin formats and shapes (--om) or the dump's own."""
    # on use: pulls numpy, which `infer --help` must not import (tests/test_startup.py)
    from binio.spec import format_shape
    from infer.bin_info import describe_path

    report = describe_path(path, options)
    if as_json:
        print_json(report.to_json())
        return
    show(report.title)
    for row in report.rows:
        stats = row.stats
        flags = ""
        if stats.nan or stats.inf:
            flags = f"  !! {stats.nan} NaN, {stats.inf} inf"
        show(f"  {row.label}  {stats.dtype}{format_shape(stats.shape)}  min {_number(stats.min)}"
             f"  max {_number(stats.max)}  mean {_number(stats.mean)}  nan {stats.nan}  inf {stats.inf}{flags}")
    for note in report.notes:
        show(f"  note: {note}")
    if report.verified:
        show(f"verified: {report.verified} file(s), sizes and digests match the manifest")
    for written in report.exported:
        show(f"exported {written}")
