"""The NPU side of `compare --npu-dump DIR`: the dump files of one execution of the om, and the batch it ran.

DIR is the dump folder `infer run --dump` left beside a run's outputs (its run.json says which batch it holds), or
any dump folder msame or ais_bench wrote, at any level of ``{dump_path}/{time}/{device}/{model_name}/{model_id}/
{step}/``: it must then hold one execution (one step), taken as the dataset's first batch. Each file is read as the
public DumpData definition says (`atc_wrap.ascend_files.npu_dump`); one that cannot be read is set aside with its
reason, which the rows of its op give, rather than ending the comparison.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from atc_wrap.ascend_files.dump_slices import group_op_files, op_dump
from atc_wrap.ascend_files.npu_dump import DumpEntry, NpuDump, read_npu_dump, walk_dump_folder
from binio.errors import InferError
from binio.manifest import DatasetManifest
from infer.compare.errors import LayerwiseError
from infer.run.layout import RUN_JSON
from infer.run.record import RunRecord, load_run

_LEVELS_ABOVE = 7  # dump/{time}/{device}/{model}/{id}/{step}: how far up a run folder may be


@dataclass(frozen=True)
class NpuDumpSet:
    """One execution's dump files, by the om op each is of."""

    root: Path
    stem: str  # the batch the execution ran
    batch_reason: str
    dumps: dict[str, NpuDump]  # om op name (DumpData.op_name), and as file names spell it -> its dump
    unreadable: dict[str, str]  # op name as the file name gives it (`/` and `.` as `_`) -> why it cannot be read
    run_folder: Path | None  # the run folder whose run.json records this dump
    notes: dict[str, str] = field(default_factory=dict)  # op name as file names spell it -> how its dump was had
    left_out: tuple[Path, ...] = ()  # files msaccucmp leaves out too (`_lxslice` inside an op name)
    unmapped: tuple[Path, ...] = ()  # files named by a number that no mapping.csv row names

    def dump_of(self, op_name: str) -> NpuDump | None:
        """The op's dump, by the name DumpData gives, else by its file name's."""
        return self.dumps.get(op_name) or self.dumps.get(safe_op_name(op_name))

    def unreadable_reason(self, op_name: str) -> str:
        return self.unreadable.get(safe_op_name(op_name), "")

    def note_of(self, op_name: str) -> str:
        return self.notes.get(safe_op_name(op_name), "")


def safe_op_name(name: str) -> str:
    """An op name as dump file names spell it: ``/`` and ``.`` as ``_``."""
    return name.replace("/", "_").replace(".", "_")


def recording_run(folder: Path) -> RunRecord | None:
    """The run whose run.json records the dump `folder` is (or is inside), if any."""
    target = folder.resolve()
    for parent in [target, *target.parents][:_LEVELS_ABOVE]:
        if not (parent / RUN_JSON).is_file():
            continue
        record = load_run(parent)
        if record.dump is not None and target.is_relative_to(record.dump.path(parent).resolve()):
            return record
    return None


def _step(entry: DumpEntry) -> tuple[str, str, str, str, str]:
    where = entry.location
    return where.time, where.device, where.model_name, where.model_id, where.step


def load_npu_dump(folder: Path, manifest: DatasetManifest) -> NpuDumpSet:
    """The dump files under `folder` (one execution), read, and the batch they are of. Refused (LayerwiseError):
    no dump file, several executions, a recorded batch the dataset does not have."""
    folder = Path(folder)
    found = walk_dump_folder(folder)
    if not found.entries:
        raise LayerwiseError(f"--npu-dump {folder}: no dump file under it (expected files named "
                             "op_type.op_name.task_id.stream_id.timestamp)",
                             hint="infer run --dump writes them beside the outputs, in OUT/<timestamp>/dump")
    steps = sorted({_step(entry) for entry in found.entries})
    if len(steps) > 1:
        shown = ", ".join("/".join(part for part in step if part) or "." for step in steps[:3])
        raise LayerwiseError(f"--npu-dump {folder}: holds the dumps of {len(steps)} executions ({shown}"
                             f"{', ...' if len(steps) > 3 else ''}): expected one",
                             hint="point --npu-dump at one execution's folder (its last level is the step)")
    record = recording_run(folder)
    if record is not None and record.dump is not None:
        stem = record.dump.stem
        if stem not in manifest.stems:
            raise LayerwiseError(f"--npu-dump {folder}: {record.path} says it is of batch {stem}, which "
                                 f"{manifest.path} does not have", hint="pass the dataset the run was made from")
        reason = f"dumped by infer run --dump: {record.path}"
    else:
        stem = manifest.stems[0] if manifest.stems else ""
        reason = "the first batch: no run.json says which batch this dump is of"
    dumps: dict[str, NpuDump] = {}
    unreadable: dict[str, str] = {}
    notes: dict[str, str] = {}
    groups, left_out = group_op_files(found.entries)
    for files in groups:
        try:
            had = op_dump(files, lambda entry: read_npu_dump(entry.path, entry.name))
        except InferError as exc:
            unreadable[files.op_name] = exc.message
            continue
        dumps[files.op_name] = had.dump
        if had.dump.op_name:
            dumps.setdefault(had.dump.op_name, had.dump)
        if had.note:
            notes[files.op_name] = had.note
    return NpuDumpSet(root=folder, stem=stem, batch_reason=reason, dumps=dumps, unreadable=unreadable,
                      run_folder=record.folder if record is not None else None, notes=notes,
                      left_out=tuple(entry.path for entry in left_out), unmapped=found.unmapped)


def run_folder_of_dump(npu_dump: Path | None) -> Path:
    """The run folder whose run.json records the dump `npu_dump`: compare's --actual when it is not given."""
    if npu_dump is None:
        raise LayerwiseError("--actual: missing: the converted model's run folder is needed",
                             hint="pass --actual OUT/<timestamp> (or --npu-dump with a dump infer run --dump made)")
    record = recording_run(Path(npu_dump))
    if record is None:
        raise LayerwiseError(f"--actual: missing, and no run.json above --npu-dump {npu_dump} records it",
                             hint="pass --actual with the run folder of the om's outputs")
    return record.folder
