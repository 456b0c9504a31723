"""Labels files, and which sample each label belongs to.

A ``.npy`` array, or text: one label per line, either bare (``3``) or after the sample's name (``img_10.png 3``,
as ImageNet's validation lists are written). Bare labels are matched to the samples by position, in the dataset's
order. Named labels are matched by name to the files the samples were made from (`dataset.json` records them for
an image folder and for bare bins), whatever order either side is in: a labels file sorted one way and a folder
read another way must not pair each image with its neighbour's label. A sample without a label, a label for no
sample, or two labels for one sample is refused by name.

A name matches a sample file by its path under the dataset's source folder, else by its file name, else by its
file name without the extension (``img_10`` for ``img_10.png``), whichever is unique among the samples.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import numpy as np

from binio.npy import check_npy_header
from binio.reading import TEXT_LIMIT, read_text_file, reading
from binio.regular import refuse_special
from infer.compare.errors import LabelsError

_SHOWN = 3  # names listed in a refusal
_LARGEST_LABEL = 2**63 - 1  # int64, as the labels are held


@dataclass(frozen=True)
class LabelsFile:
    """What a labels file holds: one class per line, and the sample names when its lines name them."""

    path: Path
    labels: np.ndarray  # int64
    names: tuple[str, ...] | None = None  # None: bare labels, matched by position
    lines: tuple[int, ...] = ()  # the line number of each named label, for refusals


def _listed(names: list[str]) -> str:
    shown = ", ".join(names[:_SHOWN])
    return shown + (f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN else "")


def read_labels(path: Path) -> LabelsFile:
    """A .npy array of integer classes, or a text file of ``label`` or ``name label`` lines (not both kinds)."""
    path = Path(path)
    refuse_special(path, "a labels file")
    if not path.is_file():
        raise LabelsError(f"{path}: no such labels file")
    with reading(path):
        if path.suffix == ".npy":
            return _npy_labels(path)
        return _text_labels(path, read_text_file(path, what="a labels file", error=LabelsError))


def _npy_labels(path: Path) -> LabelsFile:
    try:
        if path.stat().st_size > TEXT_LIMIT:  # a labels array is loaded whole: as large as a labels text, at most
            raise LabelsError(f"{path}: {path.stat().st_size:,} bytes, more than a labels file holds (at most "
                              f"{TEXT_LIMIT:,})")
        check_npy_header(path, error=LabelsError)
        array = np.load(path, allow_pickle=False)
    except (ValueError, OSError) as exc:
        raise LabelsError(f"{path}: not a readable .npy file ({exc})") from None
    if array.dtype.kind == "f":
        finite = np.isfinite(array)
        if not np.all(finite) or not np.all(array == np.round(array)):
            raise LabelsError(f"{path}: expected integer class labels, found dtype {array.dtype} holding values "
                              "that are not whole numbers")
    elif array.dtype.kind not in "iu":
        raise LabelsError(f"{path}: expected integer class labels, found dtype {array.dtype}")
    if array.dtype.kind == "f" and array.size and np.abs(array).max() > _LARGEST_LABEL:
        raise LabelsError(f"{path}: label {np.abs(array).max():g}: expected a class index of 64 bits at most")
    if array.dtype.kind == "u" and array.size and int(array.max()) > _LARGEST_LABEL:
        raise LabelsError(f"{path}: label {int(array.max())}: expected a class index of 64 bits at most")
    return LabelsFile(path=path, labels=array.astype(np.int64).ravel())


def _text_labels(path: Path, text: str) -> LabelsFile:
    labels: list[int] = []
    names: list[str] = []
    lines: list[int] = []
    named_line = bare_line = 0
    for number, line in enumerate(text.splitlines(), start=1):
        tokens = line.split()
        if not tokens:
            continue
        labels.append(_label(path, number, tokens[-1]))
        if len(tokens) > 1:
            names.append(line.strip()[: -len(tokens[-1])].strip())
            lines.append(number)
            named_line = named_line or number
        else:
            bare_line = bare_line or number
        if named_line and bare_line:
            kind, other, first = (("a bare label", "`name label` lines", named_line) if len(tokens) == 1 else
                                  ("a `name label` line", "bare labels", bare_line))
            raise LabelsError(f"{path}:{number}: {kind} after {other} (line {first})",
                              hint="write every line as `name label`, or every line as a bare label")
    return LabelsFile(path=path, labels=np.asarray(labels, dtype=np.int64),
                      names=tuple(names) if named_line else None, lines=tuple(lines))


def _label(path: Path, number: int, token: str) -> int:
    """A class index as a line writes it: a whole number from 0 (a 0-based index into the model's classes)."""
    shown = token if len(token) <= 24 else token[:21] + "..."
    digits = token[1:] if token[:1] in "+-" else token
    if not (digits.isascii() and digits.isdigit()):
        raise LabelsError(f"{path}:{number}: expected an integer class label, found {shown!r}")
    if len(digits) > len(str(_LARGEST_LABEL)) or int(digits) > _LARGEST_LABEL:  # the classes are checked later
        raise LabelsError(f"{path}:{number}: label {shown}: expected a class index of 64 bits at most")
    return int(token)


def _keys(name: str) -> tuple[str, ...]:
    """The ways a name may be written: its path, its file name, its file name without the extension."""
    path = PurePosixPath(name.replace("\\", "/").removeprefix("./"))
    return (path.as_posix(), path.name, path.stem)


def _index(samples: Sequence[str]) -> list[dict[str, int | None]]:
    """Per kind of key, key -> sample index (None where two samples share that key)."""
    found: list[dict[str, int | None]] = [{}, {}, {}]
    for index, name in enumerate(samples):
        for kind, key in enumerate(_keys(name)):
            found[kind][key] = None if key in found[kind] else index
    return found


def match_by_name(labels: LabelsFile, samples: Sequence[str]) -> np.ndarray:
    """One label per sample, each taken from the line that names the sample's file."""
    assert labels.names is not None
    index = _index(samples)
    matched = np.full(len(samples), -1, dtype=np.int64)
    line_of: dict[int, int] = {}
    extra: list[str] = []
    for name, label, line in zip(labels.names, labels.labels, labels.lines, strict=True):
        sample = None
        for kind, key in enumerate(_keys(name)):
            if key in index[kind]:
                sample = index[kind][key]
                if sample is None:
                    raise LabelsError(f"{labels.path}:{line}: {name!r} fits several samples of the dataset",
                                      hint="name the sample by its path under the source folder")
                break
        if sample is None:
            extra.append(name)
            continue
        if sample in line_of:
            raise LabelsError(f"{labels.path}:{line}: a second label for sample {sample} ({samples[sample]}); "
                              f"the first is on line {line_of[sample]}")
        line_of[sample] = line
        matched[sample] = label
    if extra:
        raise LabelsError(f"{labels.path}: {len(extra)} label{'s' if len(extra) > 1 else ''} for no sample of the "
                          f"dataset: {_listed(extra)}", hint="the names are matched to the files the samples "
                          "were made from (dataset.json lists them)")
    missing = [samples[int(i)] for i in np.flatnonzero(matched < 0)]
    if missing:
        raise LabelsError(f"{labels.path}: no label for {len(missing)} sample{'s' if len(missing) > 1 else ''}: "
                          f"{_listed(missing)}", hint="one `name label` line per sample")
    return matched


def labels_for_samples(path: Path, samples: int, names: Sequence[str] | None) -> np.ndarray:
    """One label per sample in the dataset's order: named labels matched by name to `names` (the sample files),
    bare labels (and a .npy) by position."""
    labels = read_labels(path)
    if labels.names is not None:
        if names is None:
            raise LabelsError(f"{path}: labels are given by name ({labels.names[0]!r}, ...), but the dataset's "
                              "samples have no file names (its source is an array, not a folder of files)",
                              hint="write bare labels, one per line in the dataset's order")
        return match_by_name(labels, names)
    if labels.labels.size != samples:
        raise LabelsError(f"{path}: {labels.labels.size} labels for a dataset of {samples} samples",
                          hint="one label per sample, padding excluded, in the dataset's order")
    return labels.labels
