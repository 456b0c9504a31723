"""Where the two sides of a comparison are read from: run folders in msame's layout, one batch at a time.

Each batch file is read (memory-mapped when large) and only its real rows (the manifest's `rows`, padding left out)
are taken, so a comparison holds one batch of each side in memory, whatever the dataset's size.
"""

from __future__ import annotations

import math
import os
import stat
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from binio.bin_files import BinFiles
from binio.binfile import BinReader, check_bin_size, sha256_file
from binio.errors import InferError
from binio.file_stems import FileStems
from binio.manifest import DatasetManifest
from binio.spec import TensorSpec, format_shape
from infer.compare._sides.set_outputs import SetOutput, align_rows
from infer.compare.errors import RunFolderError
from infer.run.layout import newest_run_folder, output_file_name, parse_output_file_name
from infer.run.record import RunRecord, has_record, load_run


def resolve_run_folder(path: Path, *, what: str) -> Path:
    """`path` itself when it holds output files, else its newest timestamp folder (``OUT`` -> ``OUT/<ts>``)."""
    path = Path(path)
    if not path.is_dir():
        raise RunFolderError(f"{what} {path}: no such folder")
    if any(parse_output_file_name(p.name) for p in path.iterdir() if p.is_file()):
        return path
    try:
        return newest_run_folder(path)
    except InferError:
        raise RunFolderError(f"{what} {path}: no output files (<stem>_output_<i>.bin) and no timestamp folder "
                             "inside", hint="point it at OUT/<timestamp> as infer run, msame or ais_bench wrote it") \
            from None


def written_specs(folder: Path, contract_specs: tuple[TensorSpec, ...], manifest: DatasetManifest, *,
                  what: str) -> tuple[TensorSpec, ...]:
    """The output specs as the run wrote them (run.json), or the contract's for a folder msame wrote alone.

    A run.json also says which dataset the run read: outputs of another dataset are refused, since comparing them
    would give numbers that mean nothing.
    """
    if not has_record(folder):
        return contract_specs
    record = load_run(folder)
    if not record.completed:
        raise RunFolderError(f"{what} {folder}: the run did not complete (run.json says so)",
                             hint="re-run infer run; outputs of an interrupted run are not compared")
    if record.dataset_sha256 and record.dataset_sha256 != sha256_file(manifest.path):
        raise RunFolderError(f"{what} {folder}: run on the dataset {record.dataset_path}, whose dataset.json differs "
                             f"from {manifest.path}", hint="compare outputs of the same bins (--input)")
    if len(record.outputs) != len(contract_specs):
        raise RunFolderError(f"{what} {folder}: {len(record.outputs)} outputs in run.json, the model has "
                             f"{len(contract_specs)}")
    _check_batches_of(record, manifest)
    for index, (written, said) in enumerate(zip(record.outputs, contract_specs, strict=True)):
        fits = len(written.shape) == len(said.shape) and all(
            want is None or want == got for want, got in zip(said.shape, written.shape, strict=True))
        if written.name != said.name or written.dtype != said.dtype or not fits:
            raise RunFolderError(f"{record.path}: outputs[{index}] is {written.name} {written.dtype}"
                                 f"{format_shape(written.shape)}, the model's output {index} is {said.name} "
                                 f"{said.dtype}{format_shape(said.shape)}")
    return record.outputs


def _check_batches_of(record: RunRecord, manifest: DatasetManifest) -> None:
    """Refuses a run.json whose stems and rows are not the dataset's: its outputs would be paired with other
    batches, or cut at other rows."""
    stems = FileStems.of(record.stems)  # in order, as run writes them: membership and places read from the stem
    if len(stems) != len(record.rows) or stems.repeats():
        raise RunFolderError(f"{record.path}: {len(stems)} stems and {len(record.rows)} rows; expected one "
                             "row count for each batch, each batch once")
    hint = "compare outputs of the dataset the run read (--input), or run it again"
    files = manifest.inputs[0].files
    assert isinstance(files, BinFiles)  # InputManifest makes it one
    for index, stem in enumerate(manifest.stems):
        place, rows = stems.place(stem), files.rows(index)
        if place is None or record.rows[place] != rows:
            said = "not listed" if place is None else f"{record.rows[place]} rows"
            raise RunFolderError(f"{record.path}: batch {stem}: {said} in run.json, {rows} rows in "
                                 f"{manifest.path}", hint=hint)
    # Every batch of the dataset is listed, each once: a run.json as long lists nothing else.
    extra = None if len(stems) == len(manifest.stems) else next(s for s in stems if s not in manifest.stems)
    if extra is not None:
        raise RunFolderError(f"{record.path}: batch {extra}: listed in run.json, not a batch of {manifest.path}",
                             hint=hint)


def check_output_files(folder: Path, index: int, spec: TensorSpec, name: str, manifest: DatasetManifest) -> None:
    """Every batch's file of output `index` in `folder`, present and of the size `spec` gives."""
    spec = batch_spec(spec, manifest.batch)
    nbytes, place, suffix = spec.nbytes(), str(folder), output_file_name("", index)
    for stem in manifest.stems:
        path = os.path.join(place, stem + suffix)
        try:
            status = os.stat(path)
        except OSError:
            status = None
        if status is None or not stat.S_ISREG(status.st_mode):
            raise RunFolderError(f"{path}: missing: the dataset has batch {stem} and the model has output "
                                 f"{index} ({name})", hint="was the run interrupted?")
        if status.st_size != nbytes:
            check_bin_size(Path(path), spec)  # refuses, naming both sizes


def check_run_folder(folder: Path, contract_specs: tuple[TensorSpec, ...], manifest: DatasetManifest, *,
                     what: str) -> None:
    """One side whole (complete run, same dataset, every file there with its size), before the other side is
    computed: a refusal should not wait for a golden run of minutes."""
    folder = resolve_run_folder(folder, what=what)
    for index, spec in enumerate(written_specs(folder, contract_specs, manifest, what=what)):
        check_output_files(folder, index, spec, contract_specs[index].name, manifest)


def batch_spec(spec: TensorSpec, batch: int) -> TensorSpec:
    """The spec with an unknown batch dimension pinned to the dataset's batch."""
    if spec.shape and spec.shape[0] is None:
        return spec.with_shape((batch, *spec.shape[1:]))
    return spec


@dataclass(frozen=True)
class Batch:
    """The real rows of one output in one batch file, on both sides."""

    stem: str
    first_sample: int  # index of the batch's first sample in the dataset
    rows: int
    actual: np.ndarray
    golden: np.ndarray


@dataclass(frozen=True)
class OutputPair:
    """One model output: how it is stored on each side, and where."""

    index: int
    actual_spec: TensorSpec
    golden_spec: TensorSpec
    actual_dir: Path
    golden_dir: Path
    manifest: DatasetManifest
    set_output: SetOutput | None = None  # compared as a set: each sample's rows matched before the metrics

    @property
    def name(self) -> str:
        return self.golden_spec.name

    @property
    def compared_as(self) -> str:
        """How the output is compared where not element by element ("" where it is)."""
        if self.set_output is None:
            return ""
        shape = self.golden_spec.static_shape()[1 if self.batch_major else 0:]
        return self.set_output.describe(math.prod(shape[1:]) if len(shape) > 1 else 1)

    @property
    def batch_major(self) -> bool:
        """Whether the first dimension is the batch, so padding rows can be cut off."""
        return bool(self.golden_spec.shape) and self.golden_spec.shape[0] == self.manifest.batch

    def check(self) -> None:
        """Refuses before any metric runs: a missing file, a wrong size, or sides of different element counts."""
        if math.prod(self.actual_spec.static_shape()) != math.prod(self.golden_spec.static_shape()):
            raise RunFolderError(
                f"output {self.index} ({self.name}): actual {format_shape(self.actual_spec.shape)} and golden "
                f"{format_shape(self.golden_spec.shape)} hold different element counts")
        for folder, spec in ((self.actual_dir, self.actual_spec), (self.golden_dir, self.golden_spec)):
            check_output_files(folder, self.index, spec, self.name, self.manifest)

    def batches(self, stems: Collection[str] | None = None) -> Iterator[Batch]:
        """Every batch in dataset order (only those of `stems`, when given: a shard's), cut to the real rows;
        files of a batch left out are not opened. What is the same for every batch is worked out once."""
        actual_reader = BinReader(self.actual_spec, mmap=True)
        golden_reader = BinReader(self.golden_spec, mmap=True)
        actual_dir, golden_dir, suffix = str(self.actual_dir), str(self.golden_dir), output_file_name("", self.index)
        shape = self.golden_spec.static_shape() if self.batch_major else None
        first = 0
        for entry, stem in zip(self.manifest.inputs[0].files, self.manifest.stems, strict=True):
            if stems is not None and stem not in stems:
                first += entry.rows
                continue
            actual = actual_reader.read(os.path.join(actual_dir, stem + suffix))
            golden = golden_reader.read(os.path.join(golden_dir, stem + suffix))
            rows = entry.rows
            if shape is not None:
                actual = actual.reshape(shape)[:rows]
                golden = golden[:rows]
            if self.set_output is not None:
                actual = self._as_set(actual, golden)
            yield Batch(stem=stem, first_sample=first, rows=rows, actual=actual, golden=golden)
            first += rows


    def _as_set(self, actual: np.ndarray, golden: np.ndarray) -> np.ndarray:
        """The actual rows of each sample (the whole batch where the output is not batch-major) in the golden
        side's order (`infer.compare._sides.set_outputs`)."""
        actual = np.asarray(actual).reshape(golden.shape)
        if not self.batch_major:
            return align_rows(actual, golden)
        return np.stack([align_rows(a, g) for a, g in zip(actual, golden, strict=True)]) if len(golden) else actual


def output_pairs(actual_specs: tuple[TensorSpec, ...], golden_specs: tuple[TensorSpec, ...], actual_dir: Path,
                 golden_dir: Path, manifest: DatasetManifest,
                 sets: Mapping[str, SetOutput] | None = None) -> tuple[OutputPair, ...]:
    pairs = tuple(
        OutputPair(index=i, actual_spec=batch_spec(a, manifest.batch), golden_spec=batch_spec(g, manifest.batch),
                   actual_dir=actual_dir, golden_dir=golden_dir, manifest=manifest,
                   set_output=(sets or {}).get(g.name))
        for i, (a, g) in enumerate(zip(actual_specs, golden_specs, strict=True))
    )
    for pair in pairs:
        pair.check()
    return pairs
