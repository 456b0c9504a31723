"""``dataset.json``: the manifest beside a folder of .bin files, read by run and compare before anything runs.

Layout (docs/contracts.md): one folder per model input, one file per batch, zero-padded names (``000000.bin``) so that
lexicographic order (msame) and natural order (ais_bench) agree; msame pairs the inputs' files by name. ``gear``
(null for a static model's bins) names the gear of a dynamic model the bins are: ``{"kind": "batch", "values":
[4]}`` (`binio.gears`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from binio.atomic import write_json_atomic

# BinEntry and bin_file_name are read from here too: a dataset's files are what a manifest lists
from binio.bin_entry import BinEntry as BinEntry
from binio.bin_entry import bin_file_name as bin_file_name
from binio.bin_files import BinFiles, FileRowReader
from binio.document import load_document
from binio.dtypes import dtype
from binio.errors import InferError, ManifestError
from binio.fields import Fields, shown
from binio.file_stems import FileStems
from binio.gears import GEAR_KINDS, Gear, gear_from_fields, gear_json, gear_label, gear_tag
from binio.json_pieces import StreamedList, plain
from binio.layouts import LAYOUTS
from binio.name_column import NameColumn
from binio.reading import reading
from binio.spec import TensorSpec, format_shape, node_name

SCHEMA = "infer.dataset"
SCHEMA_VERSION = 2  # 2: a file's digest is xxh128 (version 1, never released, recorded sha256)
MANIFEST_NAME = "dataset.json"


def safe_folder_name(tensor: str) -> str:
    """A folder name for an input: ``bert/input_ids:0`` -> ``bert_input_ids``; never ``..`` nor a path."""
    base = tensor.rsplit(":", 1)[0] if tensor.rsplit(":", 1)[-1].isdigit() else tensor
    cleaned = "".join(c if c.isalnum() or c in "-_." else "_" for c in base).strip(".")
    return cleaned or "input"


@dataclass(frozen=True)
class InputManifest:
    """The bins of one model input."""

    tensor: str  # the model's tensor name (``images:0``)
    folder: str  # the folder under the dataset root
    dtype: str
    shape: tuple[int, ...]  # the shape of every file (batch first)
    layout: str
    files: Sequence[BinEntry]  # held as a BinFiles (binio/bin_files.py), whatever sequence was given
    source: str = ""
    preprocessing: dict[str, Any] = field(default_factory=dict)
    byte_order: str = "little"

    def __post_init__(self) -> None:
        object.__setattr__(self, "files", BinFiles.of(self.files))
        names = self.preprocessing.get("files")
        if isinstance(names, list) and names and all(type(name) is str for name in names):
            # the images dump-bin read, one per sample: 50,000 strings held by every stage at batch 1 (issue 42)
            object.__setattr__(self, "preprocessing", {**self.preprocessing, "files": NameColumn(names)})

    @property
    def spec(self) -> TensorSpec:
        return TensorSpec(name=self.tensor, dtype=self.dtype, shape=tuple(self.shape), layout=self.layout)

    def to_json(self) -> dict[str, Any]:
        return plain(self.streamed_json())

    def streamed_json(self) -> dict[str, Any]:
        """`to_json`'s document with its files as a `StreamedList`, made one by one as it is written."""
        return {
            "tensor": self.tensor, "folder": self.folder, "dtype": self.dtype, "shape": list(self.shape),
            "layout": self.layout, "byte_order": self.byte_order, "source": self.source,
            "preprocessing": self.preprocessing,
            "files": StreamedList(lambda: (f.to_json() for f in self.files)),  # made while dataset.json is written
        }

    @classmethod
    def from_fields(cls, fields: Fields, root: Path, rows: FileRowReader) -> InputManifest:
        """One input of a manifest read from `root`: its folder and file names must stay inside `root`; its files
        in `rows`'s columns where the reader took them all in."""
        folder = fields.name("folder", root)
        dtype_name = fields.text("dtype")
        try:
            dtype_name = dtype(dtype_name).name
        except InferError as exc:
            raise fields.refuse("dtype", exc.message) from None
        shape = tuple(fields.check_integer(f"shape[{i}]", d, minimum=0) for i, d in enumerate(fields.values("shape")))
        preprocessing = fields.mapping("preprocessing", {})
        where = root / folder
        files = rows.files(fields.values("files"))
        if files is None:  # read one by one, each as the object it was: what is refused is named
            fields.data["files"] = rows.restored(fields.data["files"])
            files = BinFiles.of(BinEntry.from_fields(entry, where) for entry in fields.children("files"))
        layout = fields.text("layout", "ND")
        if layout not in LAYOUTS:
            raise fields.refuse("layout", f"expected one of {', '.join(LAYOUTS)}, found {shown(layout)}")
        byte_order = fields.text("byte_order", "little")
        if byte_order != "little":
            # msame and ais_bench read bins in the device's order, little-endian, as dump-bin writes them.
            raise fields.refuse("byte_order", f"expected 'little' (bins are read little-endian, as msame and "
                                              f"ais_bench read them), found {shown(byte_order)}")
        return cls(tensor=fields.text("tensor"), folder=folder, dtype=dtype_name, shape=shape, layout=layout,
                   byte_order=byte_order, source=fields.text("source", ""), preprocessing=dict(preprocessing),
                   files=files)


@dataclass(frozen=True)
class DatasetManifest:
    """Every input's bins, with the sample count and the padding of the last batch."""

    root: Path  # the dataset folder; not written into the file
    batch: int
    samples: int  # real samples, padding excluded
    inputs: tuple[InputManifest, ...]
    model_sha256: str = ""  # the converted (or frozen) model the bins were made for
    created_by: str = ""
    # Which gear of a dynamic model the bins are (binio.gears): its kind and values; "" and () for a static model.
    gear_kind: str = ""
    gear: Gear = ()

    @property
    def gear_label(self) -> str:
        """``batch 4``, ``image size 224x448``; "" for a dataset of a static model."""
        return gear_label(self.gear_kind, self.gear) if self.gear_kind in GEAR_KINDS else ""

    @property
    def gear_tag(self) -> str:
        """The gear as a folder name (``b4``, ``224x448``); "" for a dataset of a static model."""
        return gear_tag(self.gear_kind, self.gear) if self.gear_kind in GEAR_KINDS else ""

    @property
    def path(self) -> Path:
        return self.root / MANIFEST_NAME

    @property
    def padding(self) -> int:
        """Rows of padding in the last batch."""
        return self.file_count * self.batch - self.samples

    @property
    def file_count(self) -> int:
        return len(self.inputs[0].files) if self.inputs else 0

    # Derived from the fields once, on first use (the instance is frozen, so it cannot go stale): callers ask for
    # it per batch, and rebuilding it each time made a loop over the batches quadratic (issue 42).
    @cached_property
    def stems(self) -> FileStems:
        """The file stems shared by every input folder, in order (``000000``, ...): membership and a stem's position
        (`FileStems.place`) read from the stem, where dump-bin named the files."""
        files = self.inputs[0].files if self.inputs else BinFiles.of(())
        assert isinstance(files, BinFiles)  # InputManifest makes it one
        if files.in_order:
            return FileStems(len(files))
        return FileStems(files.stem(index) for index in range(len(files)))

    def find(self, tensor: str) -> InputManifest | None:
        """The input `tensor` names: its tensor name, node name (``images`` for ``images:0``) or folder."""
        exact = next((item for item in self.inputs if item.tensor == tensor), None)
        if exact is not None:
            return exact
        return next((item for item in self.inputs
                     if node_name(item.tensor) == node_name(tensor) or item.folder == tensor), None)

    def input(self, tensor: str) -> InputManifest:
        found = self.find(tensor)
        if found is None:
            names = ", ".join(i.tensor for i in self.inputs)
            raise ManifestError(f"{self.path}: no input {tensor!r}; it holds: {names}")
        return found

    def file_path(self, item: InputManifest, entry: BinEntry) -> Path:
        return self.root / item.folder / entry.name

    def file_text(self, item: InputManifest, entry: BinEntry) -> str:
        """`file_path` as text, for a loop over every file: a Path interns each of its parts (every file's name)
        in the interpreter's table of interned strings, which 50,000 names grew by megabytes (issue 42)."""
        return os.path.join(self.root, item.folder, entry.name)

    def to_json(self) -> dict[str, Any]:
        return plain(self._document())

    def _document(self) -> dict[str, Any]:
        """What dataset.json holds, its lists of files made only while it is written."""
        return {
            "schema": SCHEMA, "version": SCHEMA_VERSION, "batch": self.batch, "samples": self.samples,
            "padding": self.padding, "files": self.file_count, "model_sha256": self.model_sha256,
            "created_by": self.created_by,
            "gear": gear_json(self.gear_kind, self.gear) if self.gear_kind else None,
            "inputs": [i.streamed_json() for i in self.inputs],
        }

    def save(self) -> DatasetManifest:
        write_json_atomic(self.path, self._document())
        return self


def dataset_folder(dataset: DatasetManifest | Path | str) -> Path:
    """A dataset given as its manifest or as the path the user named: what the stages that read bins accept.
    They read the manifest again from the path, with their own checks."""
    return dataset.root if isinstance(dataset, DatasetManifest) else Path(dataset)


def load_manifest(path: Path | str) -> DatasetManifest:
    """Reads ``dataset.json`` (or the one inside a folder), refusing a missing, corrupt, foreign or newer one."""
    path = Path(path)
    if path.is_dir():
        path = path / MANIFEST_NAME
    rows = FileRowReader()  # the files' entries go into columns as they are parsed
    data = load_document(path, schema=SCHEMA, version=SCHEMA_VERSION, kind="dataset manifest", short="manifest",
                         error=ManifestError, missing="no such dataset manifest",
                         missing_hint="infer dump-bin writes dataset.json", object_hook=rows)
    with reading(path):
        return _manifest(_outside_files_restored(data, rows), path, rows)


def _outside_files_restored(data: dict[str, Any], rows: FileRowReader) -> dict[str, Any]:
    """The document with any object the reader took for a file entry outside an input's "files" (a preprocessing
    record shaped as one) restored: only those lists are read from the columns."""
    restored = {key: rows.restored(value) for key, value in data.items() if key != "inputs"}
    inputs = data.get("inputs")
    if isinstance(inputs, list):
        restored["inputs"] = [{key: value if key == "files" and isinstance(value, list) else rows.restored(value)
                               for key, value in item.items()}
                              if isinstance(item, dict) else rows.restored(item) for item in inputs]
    elif "inputs" in data:
        restored["inputs"] = rows.restored(inputs)
    return restored


def _manifest(data: dict[str, Any], path: Path, rows: FileRowReader) -> DatasetManifest:
    fields = Fields(data, path=path, entry="", error=ManifestError)
    batch = fields.integer("batch", minimum=1)
    inputs = tuple(InputManifest.from_fields(item, path.parent, rows) for item in fields.children("inputs"))
    for index, item in enumerate(inputs):
        _check_batch(fields, index, item, batch)
    gear_kind, gear = gear_from_fields(fields.child("gear")) if fields.has("gear") else ("", ())
    return DatasetManifest(
        root=path.parent, batch=batch, samples=fields.integer("samples", minimum=0), inputs=inputs,
        model_sha256=fields.text("model_sha256", ""), created_by=fields.text("created_by", ""),
        gear_kind=gear_kind, gear=gear,
    )


def _check_batch(fields: Fields, index: int, item: InputManifest, batch: int) -> None:
    """Every file holds `batch` samples (its shape's first dim), of which `rows` are real: a batch the shape does
    not say would cut padding at the wrong row. A scalar input (shape ()) has no batch dimension: each file holds
    its one value, the same for every batch."""
    where = f"inputs[{index}]"
    if item.shape and item.shape[0] != batch:
        raise fields.refuse(f"{where}.shape", f"{format_shape(item.shape)} does not start with the dataset's "
                                              f"batch {batch}")
    for number, entry in enumerate(item.files):
        if entry.rows > batch:
            raise fields.refuse(f"{where}.files[{number}].rows", f"{entry.rows} real samples in a batch of {batch}")


def parent_input(folder: Path) -> tuple[DatasetManifest, InputManifest] | None:
    """The dataset `folder` is one input folder of, with that input's entry."""
    if not (folder.parent / MANIFEST_NAME).is_file():
        return None
    manifest = load_manifest(folder.parent)
    item = next((i for i in manifest.inputs if i.folder == folder.name), None)
    return None if item is None else (manifest, item)
