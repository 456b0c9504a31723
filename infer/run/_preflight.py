"""Every bin checked against the model before any backend starts, so a wrong file never reaches msame.

msame checks nothing and ais_bench only byte counts; a float64 bin fed to a float32 input gives garbage, a stray
file in one input folder shifts the pairing of all the others. Each refusal names the file, what the model
expects and what was found.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from binio.bin_files import BinFiles
from binio.binfile import check_bin_size
from binio.dataset import check_manifest_consistent
from binio.dtypes import dtype
from binio.errors import InferError
from binio.gears import DynamicShape
from binio.manifest import MANIFEST_NAME, DatasetManifest, InputManifest, load_manifest
from binio.regular import refuse_special
from binio.spec import TensorSpec, format_shape
from infer.gear_check import check_dataset_gear


class PreflightError(InferError):
    """Bins that do not fit the model they are about to be fed to."""


def widens(stored: str, taken: str) -> bool:
    """Whether bins stored as `stored` are fed to a `taken` input with no value changed (float16 -> float32)."""
    return stored != taken and bool(np.can_cast(dtype(stored).np_dtype, dtype(taken).np_dtype, "safe"))


def _check_input(root: Path, item: InputManifest, spec: TensorSpec, widen: bool) -> None:
    where = root / item.folder
    if item.dtype != spec.dtype and not (widen and widens(item.dtype, spec.dtype)):
        raise PreflightError(f"{where}: bins are {item.dtype}, the model's input {spec.name} takes {spec.dtype}",
                             hint=f"re-run infer dump-bin with --dtype {spec.dtype}")
    if len(item.shape) != len(spec.shape):
        raise PreflightError(f"{where}: bins have shape {format_shape(item.shape)}, the model's input {spec.name} "
                             f"takes {format_shape(spec.shape)}")
    if spec.shape and spec.shape[0] is not None and item.shape[0] != spec.shape[0]:
        raise PreflightError(f"{where}: bins hold batches of {item.shape[0]}, the model's input {spec.name} takes "
                             f"batch {spec.shape[0]} {format_shape(spec.shape)}",
                             hint=f"re-run infer dump-bin with --batch {spec.shape[0]}")
    if any(want is not None and want != got for want, got in zip(spec.shape, item.shape, strict=True)):
        raise PreflightError(f"{where}: bins have shape {format_shape(item.shape)}, the model's input {spec.name} "
                             f"takes {format_shape(spec.shape)}")
    if item.layout != spec.layout and "ND" not in (item.layout, spec.layout):
        raise PreflightError(f"{where}: bins are {item.layout} ({root / MANIFEST_NAME}), the model's input "
                             f"{spec.name} takes {spec.layout}", hint=f"re-run infer dump-bin with --layout "
                                                                      f"{spec.layout}")
    if not where.is_dir():
        raise PreflightError(f"{where}: no such folder ({MANIFEST_NAME} lists {len(item.files)} bins of "
                             f"{item.tensor} in it)")
    listed = BinFiles.of(item.files).name_set()
    with os.scandir(where) as listing:  # names, not a Path each: 50,000 at batch 1
        # a .bin suffix as PurePath has it: not the name ".bin" itself
        stray = sorted(e.name for e in listing if e.name.endswith(".bin") and len(e.name) > 4 and e.name not in listed)
    if stray:
        raise PreflightError(f"{where / stray[0]}: not listed in {root / MANIFEST_NAME} "
                             "(msame and ais_bench would feed it with the others)",
                             hint="remove it, or re-run infer dump-bin into an empty folder")
    fed = spec.with_shape(item.shape).with_dtype(item.dtype)
    folder = str(where)
    for entry in item.files:
        check_bin_size(os.path.join(folder, entry.name), fed)


def _refuse_without_manifest(bins: Path) -> None:
    """A folder with no dataset.json: one input folder of a dataset, or bins written by hand."""
    if (bins.parent / MANIFEST_NAME).is_file():
        raise PreflightError(f"{bins}: an input folder of the dataset {bins.parent}, not a dataset",
                             hint=f"pass --input {bins.parent}")
    found = sum(1 for _ in bins.glob("*.bin"))
    if found:
        raise PreflightError(f"{bins}: {found} .bin file(s) but no {MANIFEST_NAME}, so their dtype and shape are "
                             "unknown", hint=f"infer dump-bin -m MODEL -o BINS {bins} writes them again, checked, "
                                             f"with a {MANIFEST_NAME} (bare bins are read in the model's dtype)")
    raise PreflightError(f"{bins}: not a dump-bin dataset (no {MANIFEST_NAME}, no .bin files)",
                         hint="infer dump-bin -m MODEL -o BINS SOURCE writes one")


def dataset_if_any(bins: Path) -> DatasetManifest | None:
    """The dataset.json in `bins`, read once for a whole run (the runner and `preflight` both need it); None where
    there is no such file (`preflight` says why)."""
    return load_manifest(bins) if (Path(bins) / MANIFEST_NAME).is_file() else None


def preflight(bins: Path, specs: tuple[TensorSpec, ...], *, widen: bool = False,
              loaded: DatasetManifest | None = None, gears: DynamicShape | None = None) -> DatasetManifest:
    """The dataset at `bins` after checking each of its files against the model's input `specs`.

    With `widen`, bins of a narrower dtype that casts to the input's without loss are taken (float16 bins made
    for an om with --input_fp16_nodes, fed to the frozen pb's float32 input for the golden run). `loaded` is its
    dataset.json read already (`dataset_if_any`); `gears`, the converted model's (`check_dataset_gear`).
    """
    bins = Path(bins)
    if not bins.is_dir():
        raise PreflightError(f"{bins}: no such folder", hint="infer dump-bin writes one")
    refuse_special(bins / MANIFEST_NAME, "a dataset manifest")
    if not (bins / MANIFEST_NAME).is_file():
        _refuse_without_manifest(bins)
    manifest = loaded if loaded is not None else load_manifest(bins)
    model_names = ", ".join(spec.name for spec in specs)
    for spec in specs:
        if manifest.find(spec.name) is None:
            held = ", ".join(item.tensor for item in manifest.inputs)
            raise PreflightError(f"{manifest.path}: no bins for the model's input {spec.name}; it holds {held} "
                                 f"(bins of another model?)", hint=f"the model's inputs are: {model_names}")
    for item in manifest.inputs:
        if not any(manifest.find(spec.name) is item for spec in specs):
            raise PreflightError(f"{manifest.path}: input {item.tensor} is not an input of the model "
                                 f"(its inputs: {model_names})")
    if manifest.file_count == 0:
        raise PreflightError(f"{manifest.path}: lists no bins")
    check_manifest_consistent(manifest)  # msame pairs the inputs' files by name
    for spec in specs:
        _check_input(bins, input_for(manifest, spec), spec, widen)
    check_dataset_gear(manifest, gears)
    return manifest


def input_for(manifest: DatasetManifest, spec: TensorSpec) -> InputManifest:
    item = manifest.find(spec.name)
    if item is None:  # preflight has refused this already
        raise PreflightError(f"{manifest.path}: no bins for {spec.name}")
    return item

