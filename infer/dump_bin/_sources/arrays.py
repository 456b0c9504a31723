"""``.npy`` (read batch by batch, so a dataset larger than memory streams) and ``.npz`` sources; pickles refused."""

from __future__ import annotations

import io
import math
from pathlib import Path
from typing import Any

import numpy as np

from binio.dtypes import from_numpy
from binio.errors import InferError
from binio.manifest import safe_folder_name
from binio.npy import check_npy_header, check_npy_stream
from binio.spec import node_name
from infer.dump_bin.errors import SourceError


def _checked_array(array: np.ndarray, what: str) -> np.ndarray:
    if array.ndim == 0:
        raise SourceError(f"{what}: a scalar, expected an array of samples (samples first)")
    try:
        from_numpy(array.dtype)
    except InferError:
        raise SourceError(f"{what}: dtype {array.dtype} is not a tensor dtype (numbers or bool expected)") from None
    return array


_HEADS = ((b"\x93NUMPY", ".npy", "a .npy array"), (b"PK\x03\x04", ".npz", "an .npz (zip) archive"),
          (b"PK\x05\x06", ".npz", "an empty .npz (zip) archive"), (b"\x80", "pickle", "a Python pickle"))


def _check_head(path: Path, suffix: str) -> None:
    """Refuses a file whose first bytes are not what its suffix says, before numpy guesses (numpy's fallback
    for anything else is to unpickle it, and its errors then speak of pickles or end of file)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(6)
    except OSError as exc:
        raise SourceError(f"{path}: cannot read ({exc.strerror or exc})") from None
    kind, what = next(((k, w) for magic, k, w in _HEADS if head.startswith(magic)), (None, ""))
    if kind == suffix:
        return
    if kind == "pickle":
        raise _pickle_refused(str(path))
    found = what or (f"other data (its first bytes are {head!r})" if head else "an empty file")
    raise SourceError(f"{path}: not a {suffix} file: it is {found}")


def _pickle_refused(what: str) -> SourceError:
    return SourceError(f"{what}: holds pickled Python objects, which are never loaded (allow_pickle=False)",
                       hint="save the samples as a plain numeric array (np.save(path, np.asarray(x, 'float32')))")


class _ArraySource:
    """Rows of one array, samples first: what a .npy and an .npz member have in common."""

    array: np.ndarray

    @property
    def samples(self) -> int | None:
        return int(self.array.shape[0])

    @property
    def sample_shape(self) -> tuple[int, ...]:
        return tuple(int(d) for d in self.array.shape[1:])

    @property
    def preprocessing(self) -> dict[str, Any]:
        return {}

    def read(self, start: int, stop: int) -> np.ndarray:
        return self.array[start:stop]

    def close(self) -> None:
        pass


class NpySource(_ArraySource):
    """A ``.npy`` file, streamed: each read copies its rows from the file, so memory stays a few batches whatever
    the file's size.

    Rows are read with one ``readinto`` a batch, not through the memory map numpy offers: a read copies a batch
    from the page cache, where a mapping faults it in page by page (three to four times the time, measured on a
    300 MB file). The map is still opened, for numpy's checks of the header and the file's size, and serves the
    rare Fortran-ordered file, whose rows are not contiguous on disk.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        _check_head(path, ".npy")
        try:
            check_npy_header(path, error=SourceError)
            array = np.load(path, mmap_mode="r", allow_pickle=False)
        except ValueError as exc:
            if "allow_pickle" in str(exc) or "object" in str(exc).lower():
                raise _pickle_refused(str(path)) from None
            raise SourceError(f"{path}: not a readable .npy file ({exc})") from None
        except OSError as exc:
            raise SourceError(f"{path}: cannot read ({exc.strerror or exc})") from None
        self.array = _checked_array(array, str(path))
        self._row_bytes = self.array.itemsize * math.prod(self.array.shape[1:])
        self._offset = int(getattr(self.array, "offset", 0))  # where the data starts: np.memmap read the header
        self._file: io.FileIO | None = None
        if self.array.flags.c_contiguous:
            try:
                self._file = io.FileIO(path, "r")  # unbuffered: a batch is one read into its array
            except OSError as exc:
                raise SourceError(f"{path}: cannot read ({exc.strerror or exc})") from None

    @property
    def description(self) -> str:
        return str(self.path)

    def read(self, start: int, stop: int) -> np.ndarray:
        if self._file is None:
            return self.array[start:stop]  # Fortran order: through the map
        rows = np.empty((stop - start, *self.array.shape[1:]), dtype=self.array.dtype)
        self.read_into(rows, start)
        return rows

    def reads_into(self, out: np.ndarray) -> bool:
        """Whether `read_into` can fill `out`: C-contiguous rows of this file's dtype (byte order included)."""
        return (self._file is not None and out.dtype == self.array.dtype and out.flags.c_contiguous
                and out.shape[1:] == self.array.shape[1:])

    def read_into(self, out: np.ndarray, start: int) -> None:
        """Rows ``[start, start + len(out))`` into `out`, straight from the file: dump-bin reads a batch already in
        the bins' dtype into the batch buffer it writes from, so no array is made (and page-faulted in) per batch."""
        assert self._file is not None and out.flags.c_contiguous
        wanted = out.nbytes
        view = out.data.cast("B") if wanted else memoryview(b"")
        done = 0
        try:
            self._file.seek(self._offset + start * self._row_bytes)
            while done < wanted:  # a read may return less than asked (a signal, a network file system)
                got = self._file.readinto(view[done:])
                if not got:
                    raise SourceError(f"{self.path}: ends before sample {start + len(out)} (was it cut short while "
                                      "being read?)")
                done += got
        except OSError as exc:
            raise SourceError(f"{self.path}: cannot read ({exc.strerror or exc})") from None

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        # The mapping goes (unmapped, its file closed) with the last array that views it: rows it handed out
        # (Fortran order) may still be being written on another thread (dump-bin writes whole batches straight from
        # them, and a second Ctrl-C can cut short its wait), and unmapping under them would crash the process.
        del self.array


def npz_key_for(keys: list[str], tensor: str) -> str | None:
    """The npz key that names `tensor`: its tensor name, node name or folder name (np.savez cannot store ``:``)."""
    candidates = (tensor, node_name(tensor), safe_folder_name(tensor), node_name(tensor).replace("/", "_"))
    for candidate in candidates:
        if candidate in keys:
            return candidate
    return None


class NpzSource(_ArraySource):
    """One array of a ``.npz``, the key matched to the input's name. Loaded whole (npz members are zipped)."""

    def __init__(self, path: Path, tensor: str, *, single_input: bool) -> None:
        import zipfile  # here: the .npy sources, the common case, do not need it

        self.path = path
        _check_head(path, ".npz")
        try:
            archive = np.load(path, allow_pickle=False)
        except (ValueError, OSError, zipfile.BadZipFile) as exc:
            raise SourceError(f"{path}: not a readable .npz file ({exc})") from None
        with archive:
            keys = list(archive.files)
            key = npz_key_for(keys, tensor)
            if key is None and single_input and len(keys) == 1:
                key = keys[0]
            if key is None:
                raise SourceError(
                    f"{path}: no array for input {tensor} (looked for {node_name(tensor)!r}); "
                    f"its keys are: {', '.join(keys) or 'none'}",
                    hint=f"name the array {node_name(tensor)!r} in np.savez, or pass --source {tensor}=FILE.npy",
                )
            self.key = key
            try:
                with archive.zip.open(f"{key}.npy") as member:
                    check_npy_stream(member, archive.zip.getinfo(f"{key}.npy").file_size, f"{path}[{key}]",
                                     error=SourceError)
                array = archive[key]
            except ValueError as exc:
                if "allow_pickle" in str(exc):
                    raise _pickle_refused(f"{path}[{key}]") from None
                raise SourceError(f"{path}[{key}]: cannot read ({exc})") from None
        self.array = _checked_array(array, f"{path}[{key}]")

    @property
    def description(self) -> str:
        return f"{self.path}[{self.key}]"
