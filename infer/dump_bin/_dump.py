"""dump-bin: a dataset to ``BINS/<input>/NNNNNN.bin`` + ``BINS/dataset.json``, in the dtype the model takes.

The dtype is the model's (the converted one's once ``convert`` has run), never whatever the array happened to
be: the commonest cause of a "wrong" om is a float32 or float64 ``tofile()`` fed to a float16 input.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import math
import os
import shutil
from array import array
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from binio.atomic import atomic_file
from binio.batching import BatchPlan, BatchSlot, padded_buffer, plan_batches
from binio.beside import start_beside
from binio.bin_files import BinFileColumns, bin_names
from binio.cast import CastReport, check_unchanged, checked_cast_into
from binio.digest import BIN_DIGEST, digest_bytes, digest_file
from binio.errors import InferError, ShapeError, Terminated
from binio.layouts import LAYOUTS
from binio.limits import check_workers
from binio.lock import folder_lock
from binio.manifest import MANIFEST_NAME, DatasetManifest, InputManifest, bin_file_name, safe_folder_name
from binio.memory import check_fits, format_bytes
from binio.output import check_output
from binio.spec import format_shape
from infer.contract import ModelContract, as_contract
from infer.dump_bin._gear import DumpGear, dump_gear
from infer.dump_bin._plan import (
    InputPlan,
    assign_sources,
    batch_file_spec,
    check_dtype,
    input_layout,
    model_batch,
    model_sha256,
)
from infer.dump_bin._sources.arrays import NpySource
from infer.dump_bin._sources.base import SampleSource
from infer.dump_bin._sources.generators import is_generator
from infer.dump_bin._sources.open import open_source, refuse_unused_preprocessing
from infer.dump_bin.errors import LossyCastError, SourceError
from infer.dump_bin.options import DumpOptions
from infer.dump_bin.result import DumpResult, InputDump
from infer.model_om import with_om_descriptors

Progress = Callable[[int, int], None]  # (batches written, batches in all)
_WRITES_IN_FLIGHT = 2  # batches being hashed and written while the next one is read and cast
_BUFFERS = _WRITES_IN_FLIGHT + 2  # per input, reused in turn: fresh buffers cost a page fault per 4 KiB


class _CreatedFiles:
    """The batch files this run created, by folder, as their indices: 8 bytes a file where a Path each was 300."""

    def __init__(self) -> None:
        self._indices: dict[Path, array[int]] = {}

    def add(self, folder: Path, index: int) -> None:
        self._indices.setdefault(folder, array("q")).append(index)

    def paths(self) -> Iterator[Path]:
        for folder, indices in self._indices.items():
            for index in indices:
                yield folder / bin_file_name(index)


def _remove_created(created: _CreatedFiles, folders: list[Path]) -> None:
    """Undoes a failed run into a new (or empty) folder: the files and folders this run created, nothing else
    (the folder itself goes with its lock, when this run created it)."""
    for path in created.paths():
        path.unlink(missing_ok=True)
    for folder in reversed(folders):
        with contextlib.suppress(OSError):
            folder.rmdir()


def _batch_payload(source: SampleSource, buffer: np.ndarray, slot: BatchSlot) -> tuple[np.ndarray, CastReport]:
    """One batch file's contents and what the cast did, with only the NaN/inf check a same-dtype cast makes where
    the rows are in the bin's dtype already:
    - an .npy in the bin's dtype: its rows read straight into `buffer`, the rest zeroed (the padding);
    - rows handed out whole in the bin's dtype, byte order and C order (an .npz member): the rows themselves, no
      copy;
    - else `buffer`, the rows cast into it and the rest zeroed.

    Rows handed out may be written and hashed after the next batch is read: sources hand out rows that stay valid
    (`SampleSource.read`).
    """
    if buffer.ndim == 0:  # a scalar input: its one value, the same in every batch file
        return buffer, checked_cast_into(buffer, source.read(0, 1))
    if isinstance(source, NpySource) and source.reads_into(buffer):
        source.read_into(buffer[: slot.rows], slot.start)
        buffer[slot.rows:] = 0
        return buffer, check_unchanged(buffer[: slot.rows])
    rows = source.read(slot.start, slot.stop)
    if rows.dtype == buffer.dtype and rows.shape == buffer.shape and rows.flags.c_contiguous:
        return rows, check_unchanged(rows)
    report = checked_cast_into(buffer[: slot.rows], rows)
    buffer[slot.rows:] = 0  # the padding
    return buffer, report


def _write_payload(handle: BinaryIO, buffer: np.ndarray) -> None:
    handle.write(buffer.data.cast("B"))


def _write_batch(folder: Path, index: int, buffer: np.ndarray, created: _CreatedFiles) -> tuple[str, bool]:
    """Writes `buffer` to the index-th batch file of `folder` atomically unless the same bytes are there; (their
    digest, whether it wrote)."""
    path = folder / bin_file_name(index)
    digest = digest_bytes(BIN_DIGEST, buffer.data.cast("B"))
    existed = os.path.lexists(path)
    if existed and path.is_file() and path.stat().st_size == buffer.nbytes and digest_file(BIN_DIGEST, path) == digest:
        return digest, False
    with atomic_file(path, buffer.nbytes) as handle:
        _write_payload(handle, buffer)
    if not existed:
        created.add(folder, index)
    return digest, True


def _has_aipp(contract: ModelContract) -> bool:
    """Whether model.json records an AIPP for the converted model: only then are the AIPP modules imported."""
    return contract.converted is not None and contract.converted.aipp_config is not None


def _open_sources(contract: ModelContract, options: DumpOptions, plans: list[InputPlan]) -> list[SampleSource]:
    opened: list[SampleSource] = []
    try:
        for plan in plans:
            source: SampleSource | None = None
            if _has_aipp(contract):
                from infer.dump_bin._dump_aipp import aipp_image_source

                source = aipp_image_source(contract, plan.spec.name, Path(plan.source_text), options)
            if source is None and not plan.spec.shape and not is_generator(plan.source_text):
                raise SourceError(f"{plan.source_text}: input {plan.spec.name} is a scalar (one value a run, the "
                                  "same in every batch file), not samples", hint=f"give it as --source "
                                  f"{plan.spec.node}=const:VALUE")
            if source is None:
                source = open_source(
                    plan.source_text, tensor=plan.spec.name, sample_shape=plan.spec.static_shape()[1:],
                    dtype_name=plan.spec.dtype, layout=plan.layout, single_input=len(plans) == 1,
                    image_options=options.image, workers=options.workers,
                )
            opened.append(source)
            expected = plan.spec.static_shape()[1:]
            if tuple(source.sample_shape) != expected:
                raise ShapeError(
                    f"{source.description}: samples of shape {format_shape(source.sample_shape)} for input "
                    f"{plan.spec.name}, but the model takes {format_shape(expected)} per sample "
                    f"(batch shape {format_shape(plan.spec.shape)})"
                )
    except BaseException:
        for source in opened:
            source.close()
        raise
    return opened


def _sample_count(plans: list[InputPlan], sources: list[SampleSource], asked: int | None, batch: int) -> int:
    counts = [(p, s) for p, s in zip(plans, sources, strict=True) if s.samples is not None]
    distinct = {s.samples for _, s in counts}
    if len(distinct) > 1:
        raise ShapeError("inputs differ in sample count: "
                         + ", ".join(f"{p.spec.name} has {s.samples} ({s.description})" for p, s in counts),
                         hint="every input needs one sample per sample of the others")
    available = counts[0][1].samples if counts else None
    if asked is not None:
        if asked < 1:
            raise ShapeError(f"--samples {asked}: expected 1 or more")
        if available is not None and asked > available:
            raise ShapeError(f"--samples {asked}: the sources hold only {available}")
        return asked
    if available is None:
        return batch  # generators only: one batch, a smoke run
    if available == 0:
        raise ShapeError(f"{counts[0][1].description}: holds no samples")
    return int(available)


def _check_disk(output: Path, plans: list[InputPlan], samples: int, batch: int) -> None:
    """Refuses a dump whose batch files the output's file system has no room for, before the first is planned: a
    generator asked for --samples 10**20 planned 5 * 10**19 batches and never wrote one."""
    files = -(-samples // batch)
    per_file = sum(plan.spec.nbytes() for plan in plans)
    try:
        free = shutil.disk_usage(output).free
    except OSError:
        return  # a file system that does not say: the writes report ENOSPC themselves
    if files * per_file > free:
        raise ShapeError(f"--samples {samples}: {files:,} batch files of {format_bytes(per_file)} are "
                         f"{format_bytes(files * per_file)}, {format_bytes(free)} free where {output} is",
                         hint="fewer --samples, or an output folder on a larger disk")


def _remove_stale(output: Path, plans: list[InputPlan], files: int) -> None:
    """Bins of an earlier, longer dump that this one does not list: msame would read them as inputs."""
    listed = bin_names(files)
    for plan in plans:
        with os.scandir(output / plan.folder) as listing:
            for item in listing:
                # every *.bin file (hidden ones too: run's preflight refuses them), never a folder so named
                if item.name.endswith(".bin") and item.name not in listed and not item.is_dir(follow_symlinks=False):
                    os.unlink(item.path)


def dump_bins(model: ModelContract | Path | str, options: DumpOptions, progress: Progress | None = None) -> DumpResult:
    """Writes every input's samples as batch files in the model's dtype, with the manifest last."""
    contract = with_om_descriptors(as_contract(model))  # an om's bins in the om's own input dtypes and shapes
    # Bins are made for the model the contract describes (its sha256 goes into dataset.json): a stale contract is
    # refused. The pb is hashed beside the dump (sha256 takes 0.7 s a GB): a dataset already there is touched, and
    # the manifest written, only once it is known good, and a refusal found while writing stops the writing. A
    # refusal leaves what was there, and none of this dump's files.
    return _dump(contract, options, progress, start_beside(contract.check_pb_unchanged, "dump-bin-model-check"))


def _output(options: DumpOptions) -> Path:
    assert options.output is not None  # refused by _dump first
    return Path(options.output)


def _dump(contract: ModelContract, options: DumpOptions, progress: Progress | None,
          model_check: concurrent.futures.Future[None]) -> DumpResult:
    if options.output is None:
        raise InferError("dump-bin: no output folder given (-o BINS)")
    if not options.sources:
        raise InferError("no source: give SOURCE or --source NAME=SOURCE",
                         hint="e.g. infer dump-bin -m model.json -o bins data.npy")
    gear = dump_gear(contract, options)  # a dynamic model's gear: its inputs' shapes at it
    specs = contract.model_inputs if gear is None else gear.specs
    for spec in specs:
        check_dtype(contract, spec, options.dtype)
    check_workers(options.workers, "--workers")
    batch = model_batch(specs, options.batch if gear is None or gear.kind == "batch" else None)
    assigned = assign_sources(specs, options.sources, contract.signature_keys)
    folders = [safe_folder_name(s.name) for s in specs]
    if len(set(folders)) != len(folders):
        folders = [f"{i:02d}_{name}" for i, name in enumerate(folders)]
    # A dynamic batch (None) is pinned to --batch from here on: every file has that shape.
    plans = [InputPlan(spec=batch_file_spec(spec, batch), folder=folder,
                       layout=input_layout(spec, options.layout), source_text=assigned[spec.name])
             for spec, folder in zip(specs, folders, strict=True)]
    needed = sum(_BUFFERS * math.prod(p.spec.static_shape()) * p.spec.dt.itemsize for p in plans)
    check_fits(needed, f"dump-bin with batch {batch}: {_BUFFERS} batch buffers per input ("
               + ", ".join(f"{p.spec.name} {format_shape(p.spec.shape)} {p.spec.dtype}" for p in plans) + ")",
               hint="a smaller --batch (or re-freeze the model for one)")
    output = _output(options)
    for plan in plans:
        source_path = Path(plan.source_text)
        if source_path.is_dir() and output.resolve() in (source_path.resolve(), *source_path.resolve().parents):
            raise SourceError(f"{plan.source_text}: the source lies inside the output folder {output}",
                              hint="write the re-batched bins to another folder")
    declared: dict[str, dict[str, Any]] = {}
    if not _has_aipp(contract):
        refuse_unused_preprocessing(options.image, [plan.source_text for plan in plans])
    if _has_aipp(contract):
        from infer.dump_bin._dump_aipp import declared_preprocessing

        declared = declared_preprocessing(contract, options)  # refused before any source opens
    with folder_lock(output, command="dump-bin"):
        fresh = not check_output(output, force=options.force,
                                 hint="pass --force to overwrite it (files whose digest matches are kept)")
        if not fresh:
            model_check.result()  # before a dataset already there loses its manifest
        return _dump_locked(contract, options, plans, batch, fresh, declared, progress, model_check, gear)


def _dump_locked(contract: ModelContract, options: DumpOptions, plans: list[InputPlan], batch: int, fresh: bool,
                 declared: dict[str, dict[str, Any]], progress: Progress | None,
                 model_check: concurrent.futures.Future[None], gear: DumpGear | None) -> DumpResult:
    output = _output(options)
    sources = _open_sources(contract, options, plans)
    created = _CreatedFiles()
    folders: list[Path] = []
    try:
        samples = _sample_count(plans, sources, options.samples, batch)
        _check_disk(output, plans, samples, batch)
        slots = plan_batches(samples, batch)
        try:
            folders = _make_folders(output, plans)
            (output / MANIFEST_NAME).unlink(missing_ok=True)  # until the new one is written, the folder is no dataset
            result = _write_all(contract, options, plans, sources, slots, batch, samples, declared, progress,
                                created, model_check, gear)
        except BaseException as exc:
            # An interrupted run keeps its whole files, so that a re-run with --force resumes from them.
            if fresh and not isinstance(exc, (KeyboardInterrupt, Terminated)):
                _remove_created(created, folders)
            raise
    finally:
        for source in sources:
            source.close()
    return result


def _make_folders(output: Path, plans: list[InputPlan]) -> list[Path]:
    """Each input's folder; returns those this call created."""
    made = []
    for plan in plans:
        try:
            if not (output / plan.folder).is_dir():
                (output / plan.folder).mkdir(parents=True)
                made.append(output / plan.folder)
        except OSError as exc:
            raise InferError(f"{output}: cannot create the dataset folder here ({exc.strerror or exc})",
                             hint="choose another -o") from None
    return made


def _write_all(contract: ModelContract, options: DumpOptions, plans: list[InputPlan], sources: list[SampleSource],
               slots: BatchPlan, batch: int, samples: int, declared: dict[str, dict[str, Any]],
               progress: Progress | None, created: _CreatedFiles,
               model_check: concurrent.futures.Future[None], gear: DumpGear | None) -> DumpResult:
    output = _output(options)
    reports = [CastReport(source_dtype="", target_dtype=p.spec.dtype) for p in plans]
    entries = [BinFileColumns() for _ in plans]
    pending: list[tuple[int, int, concurrent.futures.Future[tuple[str, bool]]]] = []
    written = kept = 0

    def settle(upto: int) -> None:
        nonlocal written, kept
        while len(pending) > upto:
            index, slot_index, written_future = pending.pop(0)
            digest, fresh = written_future.result()
            entries[index].add(bin_file_name(slot_index), digest, slots[slot_index].rows)
            written, kept = written + fresh, kept + (not fresh)
            if progress is not None and index == len(plans) - 1:
                progress(slot_index + 1, len(slots))

    buffers = [[_batch_buffer(p, batch) for _ in range(_BUFFERS)] for p in plans]
    if progress is not None:
        progress(0, len(slots))
    # This thread reads and casts while `writer` hashes and writes the batches before (numpy's casts, reads and
    # writes release the GIL), so on 2 cores a cast runs beside a write. One writer: files are written in order, so
    # a failure leaves those before it whole and none after.
    with concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="dump-bin-writer") as writer:
        try:
            for slot in slots:
                if model_check.done():
                    model_check.result()  # a stale contract stops the dump as soon as it is known
                for index, (plan, source) in enumerate(zip(plans, sources, strict=True)):
                    # Buffer slot.index % _BUFFERS was last written _BUFFERS batches ago; settle() below keeps at
                    # most _WRITES_IN_FLIGHT batches pending, so that write is done.
                    payload, report = _batch_payload(source, buffers[index][slot.index % _BUFFERS], slot)
                    if report.lossy and not options.allow_lossy:
                        raise _lossy(plan, slot, report)
                    reports[index] = reports[index].merge(report)
                    settle(_WRITES_IN_FLIGHT * len(plans) - 1)
                    pending.append((index, slot.index, writer.submit(_write_batch, output / plan.folder, slot.index,
                                                                      payload, created)))
            settle(0)
        except BaseException:
            for _, _, written_future in pending:
                written_future.cancel()
            raise
    _remove_stale(output, plans, len(slots))
    inputs = tuple(
        InputManifest(
            tensor=plan.spec.name, folder=plan.folder, dtype=plan.spec.dtype,
            shape=plan.spec.static_shape(), layout=_manifest_layout(plan, source), files=entries[i].done(),
            source=source.description,
            preprocessing={**source.preprocessing, "padding": "zeros", "cast": reports[i].to_json(),
                           **({"declared": declared[plan.spec.name]} if plan.spec.name in declared else {})},
        )
        for i, (plan, source) in enumerate(zip(plans, sources, strict=True))
    )
    model_check.result()  # the manifest names the model by its sha256
    manifest = DatasetManifest(root=output, batch=batch, samples=samples, inputs=inputs,
                               model_sha256=model_sha256(contract), created_by="infer dump-bin",
                               gear_kind=gear.kind if gear else "", gear=gear.gear if gear else ()).save()
    dumps = tuple(InputDump(tensor=i.tensor, folder=i.folder, dtype=i.dtype, shape=i.shape, source=i.source,
                            cast=reports[n]) for n, i in enumerate(inputs))
    return DumpResult(manifest=manifest, inputs=dumps, files_written=written, files_kept=kept)


def _batch_buffer(plan: InputPlan, batch: int) -> np.ndarray:
    if not plan.spec.shape:  # a scalar input: one value a file
        return np.zeros((), dtype=plan.spec.dt.np_dtype)
    return padded_buffer(batch, plan.spec.static_shape()[1:], plan.spec.dt.np_dtype)


def _manifest_layout(plan: InputPlan, source: SampleSource) -> str:
    if plan.spec.layout in LAYOUTS and plan.spec.layout != "ND":
        return plan.spec.layout
    return plan.layout if "layout" in source.preprocessing else plan.spec.layout


def _lossy(plan: InputPlan, slot: BatchSlot, report: CastReport) -> LossyCastError:
    return LossyCastError(
        f"input {plan.spec.name}: {report.describe_loss()} casting {report.source_dtype} to "
        f"{report.target_dtype} in {plan.folder}/{bin_file_name(slot.index)} (samples {slot.start}..{slot.stop - 1})",
        hint=f"pass --allow-lossy to write them anyway (largest finite cast error {report.max_error:g}), "
             f"or fix the source values",
    )

