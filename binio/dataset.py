"""Reading a dump-bin dataset folder: the manifest checked against the files, then aligned batches of all inputs."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from binio.beside import start_beside
from binio.binfile import check_bin_size, read_bin
from binio.digest import BIN_DIGEST
from binio.errors import BinFileError, ManifestError
from binio.manifest import BinEntry, DatasetManifest, InputManifest, load_manifest


@dataclass(frozen=True)
class DatasetBatch:
    """One batch file of every input, as read: same stem in every input folder, as msame pairs them."""

    index: int
    stem: str  # ``000003``
    rows: int  # real samples; the rest is padding
    arrays: dict[str, np.ndarray]  # tensor name -> batch array (padding included)


def check_manifest_consistent(manifest: DatasetManifest) -> None:
    """Refuses a manifest whose inputs list different file names or rows: msame pairs the files by name."""
    if not manifest.inputs:
        raise ManifestError(f"{manifest.path}: no inputs listed")
    first = manifest.inputs[0]
    names = [entry.name for entry in first.files]
    for item in manifest.inputs:
        _check_same_names(manifest, first, names, item)
        rows = sum(f.rows for f in item.files)
        if rows != manifest.samples:
            raise ManifestError(f"{manifest.path}: input {item.tensor} lists {rows} samples, "
                                f"the manifest says {manifest.samples}")


def _check_same_names(manifest: DatasetManifest, first: InputManifest, names: list[str], item: InputManifest) -> None:
    other = [entry.name for entry in item.files]
    if other == names:
        return
    why = "(file names must match across input folders)"
    missing = next((n for n in names if n not in other), None)
    if missing is not None:
        raise ManifestError(f"{manifest.root / item.folder / missing}: missing, while {first.folder}/{missing} "
                            f"exists {why}")
    extra = next((n for n in other if n not in names), None)
    if extra is not None:
        raise ManifestError(f"{manifest.root / item.folder / extra}: no {first.folder}/{extra} to pair it with {why}")
    raise ManifestError(f"{manifest.root / item.folder}: files listed in another order than in {first.folder}/ {why}")


def check_digest(path: str | Path, entry: BinEntry, manifest_path: Path) -> None:
    """Refuses a listed file whose bytes changed since its manifest was written."""
    if not entry.matches(path):
        raise _changed(path, entry, manifest_path)


def _changed(path: str | Path, entry: BinEntry, manifest_path: Path) -> BinFileError:
    return BinFileError(f"{path}: {BIN_DIGEST} differs from {manifest_path.name}'s (the file changed after "
                        f"dump-bin)", hint="re-run infer dump-bin to rewrite it")


def read_checked(manifest: DatasetManifest, item: InputManifest, index: int) -> np.ndarray:
    """One listed file's tensor, its size checked and the digest of the bytes read: what is returned is what was
    checked, read once (hashing the file apart would read it twice, and it could change in between)."""
    entry = item.files[index]
    path = manifest.file_text(item, entry)
    array = read_bin(path, item.spec)
    if not entry.describes(array.data.cast("B")):
        raise _changed(path, entry, manifest.path)
    return array


def verify_file(manifest: DatasetManifest, item: InputManifest, index: int, *, digest: bool = True) -> str:
    """Checks one listed file's size (always) and digest (when `digest`); returns its path (text: called for
    every file, `DatasetManifest.file_text`)."""
    entry = item.files[index]
    path = manifest.file_text(item, entry)
    check_bin_size(path, item.spec)
    if digest:
        check_digest(path, entry, manifest.path)
    return path


def verify_files(manifest: DatasetManifest, *, digest: bool, stop: threading.Event | None = None) -> None:
    """Checks every listed file as `verify_file` does, in manifest order, until `stop` is set."""
    for item in manifest.inputs:
        for index in range(len(item.files)):
            if stop is not None and stop.is_set():
                return
            verify_file(manifest, item, index, digest=digest)


def verify_digests(manifest: DatasetManifest, stop: threading.Event | None = None) -> None:
    """Refuses the first listed file whose digest is not the manifest's (changed after dump-bin, size kept)."""
    verify_files(manifest, digest=True, stop=stop)


@contextlib.contextmanager
def digests_checked_beside(manifest: DatasetManifest) -> Iterator[Callable[[], None]]:
    """Checks every listed file's digest on a thread of its own while the body runs (hashing beside inference,
    not before it); the yielded function waits for the check and raises its refusal, if any."""
    stop = threading.Event()
    checked = start_beside(lambda: verify_digests(manifest, stop), "infer-digest")
    try:
        yield checked.result
    finally:
        stop.set()  # a body that failed need not wait for the whole dataset to be hashed


def open_dataset(root: Path | str, *, verify: bool = False) -> DatasetManifest:
    """The manifest of a dataset folder, after checking every file's size (and digest with `verify`)."""
    manifest = load_manifest(root)
    check_manifest_consistent(manifest)
    verify_files(manifest, digest=verify)
    return manifest


def iter_dataset(manifest: DatasetManifest, *, verify: bool = False, mmap: bool = False) -> Iterator[DatasetBatch]:
    """Aligned batches of every input, in file order, each file's size checked (and digest with `verify`)."""
    check_manifest_consistent(manifest)
    for index, stem in enumerate(manifest.stems):
        arrays: dict[str, np.ndarray] = {}
        for item in manifest.inputs:
            path = verify_file(manifest, item, index, digest=verify)
            arrays[item.tensor] = read_bin(path, item.spec, mmap=mmap)
        yield DatasetBatch(index=index, stem=stem, rows=manifest.inputs[0].files[index].rows, arrays=arrays)


def iter_samples(manifest: DatasetManifest, tensor: str, *, verify: bool = False) -> Iterator[np.ndarray]:
    """One input's real rows, file by file, padding dropped: what was dumped, for export or re-batching. A scalar
    input (no batch dimension) yields each file's one value, as a 0-d array."""
    item = manifest.input(tensor)
    for index, entry in enumerate(item.files):
        path = verify_file(manifest, item, index, digest=verify)
        values = read_bin(path, item.spec, mmap=True)
        yield values[: entry.rows] if item.shape else values
