"""bin-info: what is in a .bin file or a dump-bin dataset, checked against its manifest, optionally exported."""

from __future__ import annotations

import io
import math
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np

from binio.atomic import atomic_file, atomic_path
from binio.binfile import read_bin
from binio.dataset import check_manifest_consistent, iter_samples, read_checked, verify_file
from binio.dtypes import dtype
from binio.errors import BinFileError, InferError, OutputExistsError, ShapeError
from binio.info import TensorStats, merge_stats, tensor_stats
from binio.manifest import MANIFEST_NAME, DatasetManifest, InputManifest, load_manifest, parent_input
from binio.output import check_output, removed_if_left_empty
from binio.spec import TensorSpec, format_shape, parse_shape
from infer.bin_info._npu_dump import describe_npu_dump, is_npu_dump
from infer.bin_info.options import BinInfoOptions
from infer.bin_info.result import BinInfoReport, InfoRow


def _save_npy(path: Path, array: np.ndarray) -> None:
    with atomic_path(path) as tmp, open(tmp, "wb") as handle:
        np.save(handle, array, allow_pickle=False)


def _export_input(manifest: DatasetManifest, item: InputManifest, target: Path) -> None:
    """One input's real rows into one .npy, written file by file so memory stays one batch; a scalar input's
    values one a file. Plain writes, not a memory map: a full disk is an error naming the file (a map's write to a
    page the disk has no room for kills the process with SIGBUS), and the whole size is reserved first."""
    sample_shape = tuple(item.shape[1:])
    shape = (manifest.samples, *sample_shape) if item.shape else (len(item.files),)
    dt = np.dtype(item.spec.dt.np_dtype)
    header, fields = io.BytesIO(), {"descr": np.lib.format.dtype_to_descr(dt), "fortran_order": False, "shape": shape}
    try:
        np.lib.format.write_array_header_1_0(header, fields)  # what np.save writes where the header fits
    except ValueError:
        header = io.BytesIO()
        np.lib.format.write_array_header_2_0(header, fields)
    with atomic_file(target, len(header.getvalue()) + math.prod(shape) * dt.itemsize) as handle:
        handle.write(header.getvalue())
        for rows in iter_samples(manifest, item.tensor):
            handle.write(np.ascontiguousarray(rows, dtype=dt).data.cast("B"))


def _describe_dataset(root: Path, *, verify: bool, to_npy: Path | None, per_file: bool,
                      force: bool, progress: Callable[[int, int], None] | None = None) -> BinInfoReport:
    manifest = load_manifest(root)
    check_manifest_consistent(manifest)
    total, done = sum(len(i.files) for i in manifest.inputs), 0
    verified = 0
    problems: list[str] = []
    rows: list[InfoRow] = []
    for item in manifest.inputs:
        parts: list[TensorStats] = []
        for index, entry in enumerate(item.files):
            # --verify checks each file's size and digest on the bytes its statistics are taken of: one read
            if verify:
                try:
                    values = read_checked(manifest, item, index)
                    verified += 1
                except InferError as exc:
                    problems.append(exc.message)
                    continue
            else:
                values = read_bin(manifest.file_text(item, entry), item.spec, mmap=True)
            stats = tensor_stats(values[: entry.rows] if item.shape else values)
            done += 1
            if progress is not None:
                progress(done, total)
            parts.append(stats)
            if per_file:
                padding = f", {item.shape[0] - entry.rows} padding" if item.shape and entry.rows < item.shape[0] else ""
                what = _rows(entry.rows) if item.shape else "a scalar: one value a run"
                rows.append(InfoRow(label=f"{item.folder}/{entry.name} ({what}{padding})",
                                    stats=_with_shape(stats, item.shape)))
        if not per_file and not problems:
            padded = sum(item.shape[0] - f.rows for f in item.files) if item.shape else 0
            what = (f"{manifest.samples} samples + {padded} padding" if item.shape
                    else "a scalar: one value a file, for every batch")
            rows.append(InfoRow(label=f"{item.tensor} ({len(item.files)} files, {what})",
                                stats=merge_stats(parts, tuple(item.shape))))
    if problems:
        raise BinFileError(f"{len(problems)} of {total} files fail verification; first: {problems[0]}")
    exported: list[Path] = []
    if to_npy is not None:
        if to_npy.exists() and not to_npy.is_dir():
            raise OutputExistsError(f"{to_npy}: exists and is not a folder (a dataset exports one .npy per input)")
        with removed_if_left_empty(to_npy):  # a refusal (a full disk) leaves no folder of its own making
            try:
                for item in manifest.inputs:
                    target = to_npy / f"{item.folder}.npy"
                    check_output(target, force=force)
                    _export_input(manifest, item, target)
                    exported.append(target)
            except BaseException:
                for written in exported:  # half an export is none: the inputs written before the refusal go too
                    written.unlink(missing_ok=True)
                raise
    title = (f"{manifest.root}: {len(manifest.inputs)} input(s), batch {manifest.batch}, {manifest.samples} samples"
             f" in {manifest.file_count} file(s) per input, model sha256 {manifest.model_sha256[:12] or '-'}")
    return BinInfoReport(title=title, rows=tuple(rows), verified=verified, exported=tuple(exported))


def _rows(count: int) -> str:
    return f"{count} row" if count == 1 else f"{count} rows"


def _with_shape(stats: TensorStats, shape: tuple[int, ...]) -> TensorStats:
    return replace(stats, shape=tuple(shape))


def _listed(path: Path) -> tuple[DatasetManifest, InputManifest, int] | None:
    """The manifest entry of a .bin inside a dump-bin dataset, if it is one."""
    parent = parent_input(path.parent)
    if parent is None:
        return None
    manifest, item = parent
    index = next((i for i, entry in enumerate(item.files) if entry.name == path.name), None)
    return None if index is None else (manifest, item, index)


def _describe_file(path: Path, *, verify: bool, to_npy: Path | None, dtype_name: str | None,
                   shape_text: str | None, force: bool) -> BinInfoReport:
    listed = None if (dtype_name and shape_text) else _listed(path)
    verified = 0
    if listed is not None:
        manifest, item, index = listed
        verify_file(manifest, item, index, digest=verify)
        verified = 1 if verify else 0
        spec, rows, origin = item.spec, item.files[index].rows, f"listed in {manifest.path}"
    else:
        if not dtype_name or not shape_text:
            half = f" ({'--shape' if dtype_name else '--dtype'} missing)" if dtype_name or shape_text else ""
            raise BinFileError(f"{path}: no dataset.json lists this file, so its dtype and shape are unknown{half}",
                               hint="pass --dtype and --shape (e.g. --dtype float32 --shape 1,224,224,3)")
        shape = parse_shape(shape_text, what="--shape")
        if any(d is None for d in shape):
            raise ShapeError(f"--shape {shape_text}: every dim must be known, found {format_shape(shape)}")
        spec = TensorSpec(name=path.name, dtype=dtype(dtype_name, what="--dtype").name, shape=shape)
        rows = spec.static_shape()[0] if shape else 1
        origin = "as given by --dtype/--shape"
        if verify:
            raise BinFileError(f"--verify: {path} is in no dataset.json, so there is no digest to check it against "
                               f"(its size was checked: {spec.nbytes()} bytes for "
                               f"{format_shape(spec.shape)} {spec.dtype})")
    array = read_bin(path, spec)
    data = array[:rows] if array.ndim else array
    exported: list[Path] = []
    if to_npy is not None:
        check_output(to_npy, force=force)
        _save_npy(to_npy, np.ascontiguousarray(data))
        exported.append(to_npy)
    stats = _with_shape(tensor_stats(data), spec.static_shape())
    padding = math.prod(spec.static_shape()[:1]) - rows if spec.shape else 0
    label = f"{path.name} ({_rows(rows)}, {padding} padding)" if padding else path.name
    return BinInfoReport(title=f"{path}: {spec.dtype} {format_shape(spec.shape)}, {origin}",
                         rows=(InfoRow(label=label, stats=stats),), verified=verified, exported=tuple(exported))


def describe_path(path: Path, options: BinInfoOptions | None = None, *,
                  progress: Callable[[int, int], None] | None = None) -> BinInfoReport:
    """A .bin file or a dataset folder: stats per input (or per file), re-checked and exported on request.
    `progress` hears (files done, files) as a dataset's files are read."""
    options = options or BinInfoOptions()
    verify, to_npy, dtype_name, shape_text = options.verify, options.to_npy, options.dtype, options.shape
    per_file, force = options.per_file, options.force
    path = Path(path)
    if is_npu_dump(path):
        return describe_npu_dump(path, options)
    if options.om is not None:
        raise InferError(f"--om: {path} is not an NPU dump (a file named op_type.op_name.task.stream.timestamp, or "
                         "a folder of them): --om turns a dump's layouts back")
    if path.is_dir():
        if dtype_name or shape_text:
            raise InferError(f"{path}: --dtype and --shape are for a bare .bin; a dataset's {MANIFEST_NAME} gives "
                             "every input's dtype and shape")
        return _describe_dataset(path, verify=verify, to_npy=to_npy, per_file=per_file, force=force,
                                 progress=progress)
    if path.is_file():
        return _describe_file(path, verify=verify, to_npy=to_npy, dtype_name=dtype_name, shape_text=shape_text,
                              force=force)
    raise InferError(f"{path}: no such file or folder")
