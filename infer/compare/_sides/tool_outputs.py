"""--actual as the Ascend tools left it on the server: msame's, ais_bench's or the ModelZoo ACL benchmark's own folder
and file names, in .bin, .txt or .npy, read with the om's output dtypes and shapes.

What each tool writes (docs/ascend-tools.md has the sources):
- msame (Ascend/tools 9d6da90, msame/src): ``<output>/<time>/<name>_output_<i>.bin`` or ``.txt`` (--outfmt TXT:
  values separated by spaces); the time in one of two forms (`infer.run.layout`); <name> is the input file's name
  less its last extension in folder mode, the om's stem for a single --input file.
- ais_bench (Ascend/tools ais-bench_workload, msit ait/components/benchmark): ``<output>/<%Y_%m_%d-%H_%M_%S>/
  <name>_<i>.bin``, ``.npy`` or ``.txt`` (<name>: the input file's name before its first dot), the summary
  ``<output>/<that folder>_summary.json`` beside it, and ``device<id>_<index>/`` folders below it for msit's
  runs on several devices.
- the ACL benchmark sample of Ascend/ModelZoo-TensorFlow (commit a2c3332, e.g.
  ``ACL_TensorFlow/contrib/cv/AutoEncoder_ID2495_for_ACL/Benchmark/post_process.cpp``, SaveBinPostprocess):
  ``<outDir>/<modelType>/<name>_output<i>.bin`` (no underscore before i), <name> before the first dot.

infer's own run folders (``<stem>_output_<i>.bin`` for the dataset's stems, with run.json) are read as they are.
Another layout is staged for the comparison in a temporary folder of infer's layout: a .bin linked (its size checked
against the om's output first, naming the tool's file), a .npy or .txt converted to raw bytes of the om's dtype.
For a model with gears every output is read at the dataset's gear (`infer.run.gear_outputs`, the shapes infer run
uses), msame's own folder included: a file larger than the gear's output but no larger than the largest gear's
(msame writes its whole buffer, sized for the largest gear) is staged as its first bytes, a copy, and the layout
says so; any other size is refused naming the tool's file.
The tool's stems are matched to the dataset's batches by the dataset's own stems, else by the names of the files
dump-bin read (``hh.bin`` -> ``hh``), else, for a dataset of one batch, the one stem the folder holds.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from binio.binfile import check_bin_size, write_raw
from binio.file_stems import FileStems
from binio.manifest import DatasetManifest
from binio.name_column import is_name_list
from binio.npy import check_npy_header
from binio.spec import TensorSpec, format_shape
from infer.compare._sides.provenance import Side, run_side
from infer.compare._sides.run_folders import batch_spec
from infer.compare.errors import RunFolderError
from infer.contract import ModelContract
from infer.model_om import om_descriptors
from infer.run import GearOutputs, gear_outputs
from infer.run.layout import RUN_JSON, output_file_name, parse_ais_bench_folder, parse_timestamp_folder

MSAME, AIS_BENCH, BENCHMARK, INFER = "msame", "ais_bench", "ModelZoo benchmark", "infer run"

# (tool, pattern) in the order a name is tried: msame's `_output_<i>` before ais_bench's bare `_<i>`, whose stem
# could end in "_output".
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (MSAME, re.compile(r"^(?P<stem>.+)_output_(?P<index>\d+)\.(?P<ext>bin|txt)$")),
    (BENCHMARK, re.compile(r"^(?P<stem>.+)_output(?P<index>\d+)\.(?P<ext>bin)$")),
    (AIS_BENCH, re.compile(r"^(?P<stem>.+)_(?P<index>\d+)\.(?P<ext>bin|npy|txt)$")),
)
_DEVICE_FOLDER = re.compile(r"^device\d+_\d+$")
_LAYOUT_HINT = ("give the folder msame, ais_bench or infer run wrote (OUT or OUT/<timestamp>): <stem>_output_<i>.bin "
                "or .txt, <stem>_<i>.bin, .npy or .txt, or <stem>_output<i>.bin")


@dataclass(frozen=True)
class _OutputFile:
    path: Path
    tool: str
    stem: str
    index: int
    ext: str


def _parse(path: Path) -> _OutputFile | None:
    for tool, pattern in _PATTERNS:
        match = pattern.match(path.name)
        if match:
            return _OutputFile(path, tool, match["stem"], int(match["index"]), match["ext"])
    return None


def _listing(folder: Path) -> list[Path]:
    try:
        return sorted(folder.iterdir())
    except OSError as err:
        raise RunFolderError(f"--actual {folder}: cannot be listed ({err.strerror or err})") from None


def _files(folder: Path) -> list[_OutputFile]:
    """The output files of `folder`, and of msit's device<id>_<index> folders below it."""
    found = []
    for entry in _listing(folder):
        if entry.is_file():
            parsed = _parse(entry)
            if parsed is not None:
                found.append(parsed)
        elif entry.is_dir() and _DEVICE_FOLDER.match(entry.name):
            found += [f for sub in _listing(entry) if sub.is_file() and (f := _parse(sub)) is not None]
    return found


def _stamped(folder: Path) -> Path | None:
    """The newest run folder below `folder` named by msame's, infer's or ais_bench's timestamps."""
    stamped = [(when, path) for path in _listing(folder) if path.is_dir()
               and (when := parse_timestamp_folder(path.name) or parse_ais_bench_folder(path.name)) is not None]
    return max(stamped)[1] if stamped else None


def locate_output_folder(given: Path) -> Path:
    """The folder of output files --actual names: itself, its newest timestamp folder, or the one folder below it
    that holds output files (the benchmark's <outDir>/<modelType>)."""
    if not given.is_dir():
        raise RunFolderError(f"--actual {given}: no such folder")
    if (given / RUN_JSON).is_file() or _files(given):
        return given
    stamped = _stamped(given)
    if stamped is not None:
        return stamped
    holding = [sub for sub in _listing(given) if sub.is_dir() and _files(sub)]
    if len(holding) == 1:
        return holding[0]
    if holding:
        raise RunFolderError(f"--actual {given}: output files in {len(holding)} folders "
                             f"({', '.join(p.name for p in holding)}): expected one",
                             hint="name the folder of the run to compare")
    raise RunFolderError(f"--actual {given}: no output files (<stem>_output_<i>.bin) and no timestamp folder inside",
                         hint=_LAYOUT_HINT)


def _source_stems(manifest: DatasetManifest) -> list[list[str]]:
    """The names of the files dump-bin read, as msame (less the last extension) and ais_bench and the benchmark
    (before the first dot) name their outputs: one per dataset file, when there is one per file."""
    if not manifest.inputs:
        return []
    prep = manifest.inputs[0].preprocessing
    names = prep.get("file_names") if is_name_list(prep.get("file_names")) else prep.get("files")
    if not is_name_list(names) or len(names) != manifest.file_count:
        return []
    base = [Path(str(name)).name for name in names]
    return [[Path(name).stem for name in base], [name.split(".", 1)[0] for name in base]]


@dataclass(frozen=True)
class ToolOutputs:
    """What --actual holds: the tool that wrote it, and each dataset batch's file of each output (none where the
    folder is infer's own layout, read as it is)."""

    given: Path
    folder: Path  # where the files are
    tool: str  # infer run, msame, ais_bench, ModelZoo benchmark
    files: dict[tuple[str, int], _OutputFile]  # (dataset stem, output index) -> the tool's file
    matched_by: str  # how the tool's stems were matched to the dataset's batches

    @property
    def as_infer_writes(self) -> bool:
        """Whether the folder is infer's (and msame's) own layout: read as it is, its own checks naming what lacks."""
        return not self.files

    @property
    def formats(self) -> tuple[str, ...]:
        return tuple(sorted({f.ext for f in self.files.values()}))


def _tool_of(folder: Path, files: list[_OutputFile]) -> str:
    if (folder / RUN_JSON).is_file():
        return INFER
    if (folder.parent / f"{folder.name}_summary.json").is_file():
        return AIS_BENCH
    kinds = {f.tool for f in files}
    return kinds.pop() if len(kinds) == 1 else " / ".join(sorted(kinds))


def _in_infer_layout(folder: Path, files: list[_OutputFile], stems: Sequence[str], stage_own_names: bool) -> bool:
    """A run.json, msame's own names for the dataset's stems (unless `stage_own_names`), or nothing at all (what is
    missing is then named as infer's layout names it)."""
    wanted = FileStems.of(stems)
    if (folder / RUN_JSON).is_file() or not files:
        return True
    return not stage_own_names and any(
        f.tool == MSAME and f.ext == "bin" and f.stem in wanted and f.path.parent == folder for f in files)


def find_tool_outputs(given: Path, manifest: DatasetManifest, outputs: int, *,
                      stage_own_names: bool = False) -> ToolOutputs:
    """Each dataset batch's file of each of the `outputs` model outputs in the folder --actual names; refused by
    name where a batch has none. `stage_own_names`: msame's own folder, without infer's run.json, is staged too
    (a model with gears, whose files msame may pad)."""
    folder = locate_output_folder(Path(given))
    if (folder / RUN_JSON).is_file():  # infer's own run folder: its files are named by the stems, nothing listed
        # (listed, a run of 50,000 batches was 30 MB of paths and parsed names, for nothing: issue 42)
        return ToolOutputs(given=Path(given), folder=folder, tool=INFER, files={},
                           matched_by="the dataset's file names")
    files = _files(folder)
    stems = manifest.stems
    if _in_infer_layout(folder, files, stems, stage_own_names):
        return ToolOutputs(given=Path(given), folder=folder, tool=_tool_of(folder, files), files={},
                           matched_by="the dataset's file names")
    by_stem: dict[str, dict[int, _OutputFile]] = {}
    for item in files:
        by_stem.setdefault(item.stem, {}).setdefault(item.index, item)
    tool = _tool_of(folder, files)
    choices = [("the dataset's file names", list(stems))]
    choices += [("the names of the files dump-bin read", names) for names in _source_stems(manifest)]
    if len(stems) == 1 and len(by_stem) == 1:
        choices.append(("the one batch of the dataset and the one input the folder holds", list(by_stem)))
    for how, names in choices:
        if not all(name in by_stem for name in names):
            continue
        mapping = {}
        for stem, name in zip(stems, names, strict=True):
            for index in range(outputs):
                found = by_stem[name].get(index)
                if found is None:
                    written = ", ".join(f.path.name for f in by_stem[name].values())
                    raise RunFolderError(f"{folder}: no file of output {index} for {name} (batch {stem}); {tool} "
                                         f"wrote {written}", hint="was the run interrupted?")
                mapping[(stem, index)] = found
        return ToolOutputs(given=Path(given), folder=folder, tool=tool, files=mapping, matched_by=how)
    held = sorted(by_stem)
    shown = ", ".join(held[:3]) + (f", ... ({len(held)} in all)" if len(held) > 3 else "")
    raise RunFolderError(f"--actual {folder}: {tool} outputs of {shown}, none for the dataset's batch {stems[0]}",
                         hint="compare the outputs of these bins (--input), as msame or ais_bench named them")


def _read_text(path: Path, spec: TensorSpec) -> np.ndarray:
    try:
        words = path.read_text(encoding="ascii", errors="strict").split()
        kind = np.float64 if spec.dt.is_float else np.int64
        return np.array(words, dtype=kind)
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise RunFolderError(f"{path}: not a text output of numbers ({err})") from None


def _read_npy(path: Path, spec: TensorSpec) -> np.ndarray:
    try:
        check_npy_header(path, error=RunFolderError)
        array = np.load(path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError, EOFError) as err:
        raise RunFolderError(f"{path}: not a .npy file numpy reads ({err})") from None
    if not isinstance(array, np.ndarray) or array.dtype != spec.dt.np_dtype.newbyteorder("="):
        found = getattr(array, "dtype", type(array).__name__)
        raise RunFolderError(f"{path}: holds {found}, the om's output {spec.name} is {spec.dtype}")
    return array


def _staged_array(item: _OutputFile, spec: TensorSpec, largest_bytes: int) -> tuple[np.ndarray, bool]:
    """The file's values as the om's dtype, and whether they were cut to the gear's (msame's padding)."""
    values = _read_text(item.path, spec) if item.ext == "txt" else _read_npy(item.path, spec)
    expected = math.prod(spec.static_shape())
    padded = expected < values.size <= largest_bytes // spec.dt.itemsize
    if values.size != expected and not padded:
        raise RunFolderError(f"{item.path}: {values.size} values, expected {expected} for output {spec.name} "
                             f"{format_shape(spec.static_shape())} {spec.dtype}")
    flat = np.ascontiguousarray(values.reshape(-1)[:expected]).astype(spec.dt.np_dtype, copy=False)
    return flat, padded


def _copy_head(source: Path, target: Path, size: int) -> None:
    """The first `size` bytes of `source` as `target` (a scratch file: nothing else reads it half-written)."""
    with source.open("rb") as reading, target.open("wb") as writing:
        left = size
        while left:
            chunk = reading.read(min(left, 1 << 20))
            if not chunk:
                break
            writing.write(chunk)
            left -= len(chunk)


def stage(outputs: ToolOutputs, specs: tuple[TensorSpec, ...], manifest: DatasetManifest, folder: Path,
          at_gear: GearOutputs | None = None) -> tuple[str, ...]:
    """`folder` in infer's layout: each batch's output as ``<stem>_output_<i>.bin`` of the om's dtype and shape
    (at the dataset's gear for a model with gears, `at_gear`). A file larger than the gear's output but no larger
    than the largest gear's (msame writes its whole buffer) is staged as its first bytes, the gear's; the outputs
    so cut are returned, by name."""
    trimmed: set[str] = set()
    for (stem, index), item in outputs.files.items():
        spec = at_gear.outputs[index] if at_gear is not None else batch_spec(specs[index], manifest.batch)
        expected = spec.nbytes()
        largest = at_gear.largest_bytes[index] if at_gear is not None else expected
        target = folder / output_file_name(stem, index)
        if item.ext == "bin":
            written = item.path.stat().st_size if item.path.is_file() else 0
            if expected < written <= largest:  # msame's buffer, sized for the largest gear: the gear's come first
                _copy_head(item.path, target, expected)
                trimmed.add(spec.name)
                continue
            check_bin_size(item.path, spec)  # named by the tool's own file, before anything is read
            try:
                os.symlink(item.path.resolve(), target)
            except OSError:  # no links here: a copy
                shutil.copyfile(item.path, target)
        else:
            values, padded = _staged_array(item, spec, largest)
            write_raw(target, values)
            if padded:
                trimmed.add(spec.name)
    return tuple(spec.name for spec in (at_gear.outputs if at_gear is not None else specs) if spec.name in trimmed)


@dataclass(frozen=True)
class ActualFolder:
    """The actual side as the comparison reads it: infer's layout (`folder`), and who wrote what --actual named."""

    folder: Path
    side: Side
    outputs: tuple[TensorSpec, ...]  # the om's outputs as the folder holds them (at the dataset's gear, for gears)


def om_side(contract: ModelContract, side: Side) -> Side:
    """The side with the chip the om itself names, where the side ran the contract's om."""
    found = om_descriptors(contract)
    converted = contract.converted
    if found is None or converted is None or side.model_sha256 != converted.sha256 or not found.soc_version:
        return side
    return replace(side, chip=found.soc_version)


@contextlib.contextmanager
def actual_outputs(contract: ModelContract, manifest: DatasetManifest, given: Path) -> Iterator[ActualFolder]:
    """--actual ready to compare, for the length of the comparison: infer's own run folder as it is, a tool's
    folder staged in a temporary one."""
    specs = contract.model_outputs
    # A model with gears: a tool's folder is read at the dataset's gear, msame's own names included (its files
    # may be padded to the largest gear's buffer); infer run's folder, with its run.json, says its shapes itself.
    at_gear = gear_outputs(contract, manifest) if contract.gears is not None else None
    outputs = find_tool_outputs(given, manifest, len(specs), stage_own_names=at_gear is not None)
    if outputs.as_infer_writes:
        yield ActualFolder(outputs.folder, om_side(contract, run_side(contract, outputs.folder, "actual")), specs)
        return
    converted = contract.converted  # never converted: the frozen graph's side, which the comparison refuses
    model, sha256 = (converted.path, converted.sha256) if converted is not None else (contract.pb, contract.pb_sha256)
    with tempfile.TemporaryDirectory(prefix="infer-actual-") as scratch:
        trimmed = stage(outputs, specs, manifest, Path(scratch), at_gear)
        layout = f"{'/'.join(outputs.formats)}, matched by {outputs.matched_by}"
        if trimmed and at_gear is not None:
            layout += (f"; {outputs.tool}'s files padded to the largest gear's buffer, trimmed to {at_gear.label}'s "
                       f"({', '.join(trimmed)})")
        side = Side(role="actual", run_folder=str(outputs.folder), backend=outputs.tool, model=model,
                    model_sha256=sha256, precision_mode=converted.precision_mode if converted is not None else "",
                    recorded=False, read_from=scratch, layout=layout)
        yield ActualFolder(Path(scratch), om_side(contract, side), at_gear.outputs if at_gear is not None else specs)
