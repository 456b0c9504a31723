"""`infer dump-bin`."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import typer

from binio.errors import InferError
from infer.cli.console import batch_bar, examples, print_json, show
from infer.cli.options import takes_options
from infer.dump_bin.options import DumpOptions

EXAMPLES = examples(
    "infer dump-bin -m model/model.json -o bins images/ --scale 0.00392156862745098",
    "infer dump-bin -m model_dynamic/model.json -o bins_b4 images/ --batch 4 --scale 0.00392156862745098",
)


def _pairs(items: list[str], flag: str) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    for item in items:
        name, sep, source = item.partition("=")
        if not sep or not name or not source:
            raise InferError(f"{flag} {item}: expected NAME=SOURCE (e.g. {flag} images:0=data.npy)")
        pairs.append((name, source))
    return pairs


@takes_options(options=DumpOptions)
def dump_bin(
    source: str | None = typer.Argument(None, help="The source for a single-input model (or an .npz for all)."),
    model: Path = typer.Option(..., "--model", "-m", help="The model.json the bins are for."),
    sources: list[str] = typer.Option([], "--source", "-s", help="NAME=SOURCE, once per model input."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
    *,
    options: DumpOptions,  # its flags: takes_options
) -> None:
    """Write a dataset as .bin files in the dtype the model takes, with dataset.json beside them.

    Sources: .npy, .npz, an image folder, a .bin folder, const:V or random:SEED. One folder per input, one
    zero-padded file per batch."""
    # on use: pulls numpy, which `infer --help` must not import (tests/test_startup.py)
    from binio.spec import format_shape
    from infer.contract import load_contract
    from infer.dump_bin import dump_bins

    contract = load_contract(model)
    pairs = _pairs(sources, "--source")
    if source is not None:
        pairs.insert(0, ("", source))
    options = replace(options, sources=tuple(pairs))
    with batch_bar("dump-bin") as progress:
        result = dump_bins(contract, options, progress=progress)
    manifest = result.manifest
    if as_json:
        print_json({**manifest.to_json(), "root": str(manifest.root), "written": result.files_written,
                    "kept": result.files_kept, "cast": {i.tensor: i.cast.to_json() for i in result.inputs}})
        return
    kept = f", {result.files_kept} kept (contents matched)" if result.files_kept else ""
    show(f"wrote {manifest.file_count} batch file(s) of {manifest.batch} per input: {manifest.samples} "
         f"samples, {manifest.padding} padding row(s), to {manifest.root}{kept}")
    for item in result.inputs:
        cast = item.cast
        change = (f"cast {cast.source_dtype} -> {cast.target_dtype}, largest error {cast.max_error:g}"
                  if cast.source_dtype != cast.target_dtype else f"no cast (already {cast.target_dtype})")
        show(f"  {item.tensor}  {item.dtype}{format_shape(item.shape)}  {item.folder}/  <- {item.source}"
             f"  ({change})")
        if cast.lossy:
            show(f"  !! {item.tensor}: {cast.describe_loss()} written (--allow-lossy)")
