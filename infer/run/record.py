"""``run.json``: what one run did, written beside its outputs by every backend, read back by `compare`."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, cast

import numpy as np

from binio.atomic import write_json_atomic
from binio.binfile import read_bin
from binio.document import load_document
from binio.errors import InferError, first_line
from binio.fields import Fields, check_inside, shown
from binio.file_stems import FileStems
from binio.float_column import FloatColumn
from binio.json_pieces import StreamedList, plain
from binio.manifest import DatasetManifest
from binio.reading import reading
from binio.spec import TensorSpec
from infer._version import __version__
from infer.remote.record import RemoteRecord
from infer.run._sharded_record import ScaleOut
from infer.run.dump_record import DumpRecord
from infer.run.gear_record import GearRecord
from infer.run.layout import RUN_JSON, newest_run_folder, output_file_name, parse_timestamp_folder
from infer.run.options import BACKENDS, Backend, RunOptions

SCHEMA = "infer.run"
SCHEMA_VERSION = 1


class RunRecordError(InferError):
    """A run folder without a readable run.json, or whose outputs are not what run.json says."""


def now() -> str:
    """A moment as run.json records it (``started``, ``finished``): UTC, to the second."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@dataclass(frozen=True)
class LatencyStats:
    """Milliseconds per batch (one model call on one file, averaged over --loop)."""

    per_batch_ms: Sequence[float]  # held as a FloatColumn: 8 bytes a batch
    mean_ms: float | None
    p50_ms: float | None
    p99_ms: float | None

    def __post_init__(self) -> None:
        object.__setattr__(self, "per_batch_ms", FloatColumn.of(self.per_batch_ms))

    def to_json(self) -> dict[str, Any]:
        return plain(self.document())

    def document(self) -> dict[str, Any]:
        """`to_json` with the per-batch figures as the tuple they are: what run.json is written from."""
        return {"mean": self.mean_ms, "p50": self.p50_ms, "p99": self.p99_ms,
                "per_batch": StreamedList(lambda: self.per_batch_ms)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LatencyStats:
        def number(key: str) -> float | None:
            value = data.get(key)
            return None if value is None else float(value)

        return cls(per_batch_ms=FloatColumn(float(v) for v in data.get("per_batch", [])), mean_ms=number("mean"),
                   p50_ms=number("p50"), p99_ms=number("p99"))


@dataclass(frozen=True)
class RunRecord:
    """One run folder: ``<stem>_output_<i>.bin`` for every finished stem, described by run.json."""

    folder: Path  # not written into the file
    backend: Backend
    device: str
    model_path: str
    model_sha256: str
    dataset_path: str
    dataset_sha256: str  # of dataset.json, which holds every bin's digest
    batch: int
    samples: int  # real samples in the dataset, padding excluded
    padding: int  # rows of padding in the last batch, carried from the manifest
    outputs: tuple[TensorSpec, ...]  # as written: dtype and per-file shape of each output, in contract order
    # the input file stems whose outputs are complete, in order: a FileStems (binio/file_stems.py) where read or
    # made here, a range where they are dump-bin's
    stems: Sequence[str]
    rows: tuple[int, ...]  # real samples in each stem's batch
    latency: LatencyStats
    throughput: float | None  # samples/s, padding rows included (the model computes them too)
    completed: bool
    loop: int = 1
    warmup: int = 0
    threads: int | None = None
    tool_command: tuple[str, ...] = ()
    started: str = ""
    finished: str = ""
    scale_out: ScaleOut | None = None  # a sharded run (--devices, --engine ray): its shards
    dump: DumpRecord | None = None  # --dump: the NPU dump of one batch, beside the outputs
    gear: GearRecord | None = None  # msame or ais_bench on a model with gears: the gear, its flags, what was trimmed
    remote: RemoteRecord | None = None  # msame or ais_bench on an Ascend host (--host): where, as what, what was sent
    infer_version: str = __version__  # of the infer that wrote it

    @classmethod
    def begin(cls, folder: Path, *, backend: Backend, model: tuple[Path, str], manifest: DatasetManifest,
              dataset_sha256: str, outputs: tuple[TensorSpec, ...], options: RunOptions, device: str,
              started: str | None = None) -> RunRecord:
        """The record of a run that has just begun in `folder` (nothing finished, so incomplete; not yet saved):
        the one place a plain run and the sharded driver build theirs. `model` is the file run and its sha256;
        `started` defaults to now (a resumed run keeps its first start)."""
        model_path, model_sha256 = model
        return cls(
            folder=folder, backend=backend, model_path=str(model_path.resolve()), model_sha256=model_sha256,
            dataset_path=str(manifest.root.resolve()), dataset_sha256=dataset_sha256, batch=manifest.batch,
            samples=manifest.samples, padding=manifest.padding, outputs=outputs, stems=(), rows=(),
            latency=LatencyStats(per_batch_ms=(), mean_ms=None, p50_ms=None, p99_ms=None), throughput=None,
            completed=False, loop=options.loop, warmup=options.warmup, threads=options.threads,
            started=now() if started is None else started, device=device)

    def __bool__(self) -> bool:
        return self.completed

    @property
    def path(self) -> Path:
        return self.folder / RUN_JSON

    def output_path(self, stem: str, index: int) -> Path:
        return self.folder / output_file_name(stem, index)

    def read_output(self, stem: str, index: int) -> np.ndarray:
        """One output of one batch, size-checked against the spec run.json gives it."""
        return read_bin(self.output_path(stem, index), self.outputs[index])

    def to_json(self) -> dict[str, Any]:
        return plain(self._document())

    def _document(self) -> dict[str, Any]:
        """What run.json holds; its per-batch tuples written as they are, not copied into lists first (a run of
        50,000 batches holds three of them)."""
        return {
            "schema": SCHEMA, "version": SCHEMA_VERSION, "infer_version": self.infer_version,
            "completed": self.completed,
            "backend": self.backend, "device": self.device,
            "model": {"path": self.model_path, "sha256": self.model_sha256},
            "dataset": {"path": self.dataset_path, "sha256": self.dataset_sha256, "batch": self.batch,
                        "samples": self.samples, "padding": self.padding},
            "outputs": [spec.to_json() for spec in self.outputs],
            "stems": StreamedList(lambda: self.stems), "rows": self.rows,
            "latency_ms": self.latency.document(), "throughput_samples_per_s": self.throughput,
            "loop": self.loop, "warmup": self.warmup, "threads": self.threads,
            "tool_command": list(self.tool_command), "started": self.started, "finished": self.finished,
            **({"scale_out": self.scale_out.to_json()} if self.scale_out is not None else {}),
            **({"dump": self.dump.to_json()} if self.dump is not None else {}),
            **({"gear": self.gear.to_json()} if self.gear is not None else {}),
            **({"remote": self.remote.to_json()} if self.remote is not None else {}),
        }

    def save(self) -> RunRecord:
        write_json_atomic(self.path, self._document())
        return self


def has_record(folder: Path) -> bool:
    """Whether `folder` has a run.json, of any kind: a FIFO or a broken link in its place is read, and refused,
    rather than taken for a folder msame wrote alone."""
    return os.path.lexists(Path(folder) / RUN_JSON)


def load_run(folder: Path | str) -> RunRecord:
    """The run in `folder`: a run folder, or an output root whose newest timestamp folder is taken."""
    folder = Path(folder)
    if folder.is_file() and folder.name == RUN_JSON:
        folder = folder.parent
    if not folder.is_dir():
        raise RunRecordError(f"{folder}: no such run folder")
    if not has_record(folder) and parse_timestamp_folder(folder.name) is None:
        folder = newest_run_folder(folder)
    path = folder / RUN_JSON
    data = load_document(path, schema=SCHEMA, version=SCHEMA_VERSION, kind="run record", short="run record",
                         error=RunRecordError, missing="no run.json in this run folder",
                         missing_hint="infer run writes it; a folder written by msame alone has none")
    with reading(path):
        return _record(data, path, folder)


def _record(data: dict[str, Any], path: Path, folder: Path) -> RunRecord:
    fields = Fields(data, path=path, entry="", error=RunRecordError)
    dataset = fields.child("dataset")
    model = fields.child("model")
    latency = fields.child("latency_ms", {})
    try:
        scale_out = ScaleOut.from_json(data["scale_out"]) if isinstance(data.get("scale_out"), dict) else None
    except (KeyError, TypeError, ValueError) as exc:
        raise fields.refuse("scale_out", f"malformed ({first_line(exc)})") from None
    try:
        remote = RemoteRecord.from_json(data["remote"]) if isinstance(data.get("remote"), dict) else None
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise fields.refuse("remote", f"malformed ({first_line(exc)})") from None
    threads = fields.integer("threads", None, minimum=1) if fields.has("threads") else None
    backend = cast(Backend, fields.word("backend", BACKENDS))
    model_sha256 = model.text("sha256")
    if len(model_sha256) != 64 or not all(c in "0123456789abcdef" for c in model_sha256):
        raise model.refuse("sha256", f"expected 64 hex digits (the sha256 of the model run), found "
                                     f"{shown(model_sha256)}")
    return RunRecord(
        folder=folder, backend=backend, device=fields.text("device", ""),
        infer_version=fields.text("infer_version"),
        model_path=model.text("path"), model_sha256=model_sha256,
        dataset_path=dataset.text("path"), dataset_sha256=dataset.text("sha256"),
        batch=dataset.integer("batch", minimum=1), samples=dataset.integer("samples", minimum=0),
        padding=dataset.integer("padding", minimum=0),
        outputs=tuple(TensorSpec.from_fields(item) for item in fields.children("outputs")),
        # A stem names output files in this folder (<stem>_output_<i>.bin): a bare name, nothing else.
        stems=FileStems(_stem(fields, index, stem, folder) for index, stem in enumerate(fields.values("stems"))),
        rows=tuple(fields.check_integer(f"rows[{i}]", r, minimum=0) for i, r in enumerate(fields.values("rows"))),
        latency=LatencyStats(per_batch_ms=FloatColumn(_number(latency, f"per_batch[{i}]", v) for i, v in
                                                enumerate(latency.values("per_batch", []))),
                             mean_ms=latency.number("mean", None), p50_ms=latency.number("p50", None),
                             p99_ms=latency.number("p99", None)),
        throughput=fields.number("throughput_samples_per_s", None), completed=fields.flag("completed"),
        loop=fields.integer("loop", 1, minimum=1), warmup=fields.integer("warmup", 0, minimum=0), threads=threads,
        tool_command=fields.texts("tool_command", []),
        started=fields.text("started", ""), finished=fields.text("finished", ""), scale_out=scale_out,
        dump=DumpRecord.from_fields(fields.child("dump"), folder) if fields.has("dump") else None,
        gear=GearRecord.from_fields(fields.child("gear")) if fields.has("gear") else None, remote=remote,
    )


def _stem(fields: Fields, index: int, value: Any, folder: Path) -> str:
    if not isinstance(value, str):
        raise fields.refuse(f"stems[{index}]", f"expected a string, found {shown(value)}")
    check_inside(value, folder, bare=True, path=fields.path, entry=f"stems[{index}]", error=RunRecordError,
                 follow_links=False)
    return value


def _number(fields: Fields, key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise fields.refuse(key, f"expected a number, found {shown(value)}")
    return float(value)
