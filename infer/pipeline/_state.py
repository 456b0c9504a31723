"""The pipeline's memory: per stage, the digest of everything it read and wrote, and its settings.

A stage is skipped on a re-run when its settings, the digest of every input and the digest of every output it
wrote are all what they were when it last ran: nothing it depends on changed and nothing it made was touched.
The state file lives in the work folder and is written atomically after each stage. Files are digested as bins
are (XXH3-128, `binio.digest`): a re-run reads every bin the stages made, and sha256 made that check cost 0.4 s of
CPU per 600 MB of bins, where XXH3-128 costs a few hundredths.

A re-run with nothing to do decides so from the digests it recorded, as make and dvc do: each file's digest is kept
with its size, modification time and inode (`DigestCache`), and a file whose three are unchanged is not read
again. A file modified within a second of being digested may have kept its time (a coarse clock), so its digest
is trusted only once its time is older than that: such a file is read again on the next run, then trusted.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from binio.atomic import write_json_atomic
from binio.digest import BIN_DIGEST, digest_file, digest_pieces
from binio.errors import InferError
from binio.reading import parse_json, read_bounded
from binio.regular import special_kind

STATE_FILE = "pipeline-state.json"
STATE_SCHEMA = "infer.pipeline-state"
STATE_VERSION = 2  # 2: files digested with XXH3-128 (1: sha256)
STATE_LIMIT = 64 * 2**20  # a record per stage, a digest per output: kilobytes; a larger file is not one infer wrote


# How much older than its digest a file's modification time must be for the digest to be trusted without reading
# the file: file systems keep times of a coarse clock (a few ms; NFS and FAT a second or two).
RACY_NS = 2_000_000_000


class DigestCache:
    """Each file's digest as last taken, with the size, modification time and inode it had then."""

    def __init__(self, entries: dict[str, str] | None = None) -> None:
        # path -> "size:mtime_ns:inode:digest:taken_ns", as the state file keeps it: an entry is read only when its
        # file is looked at, so a state file of 50,000 is loaded without 50,000 tuples of five numbers made first
        self.entries = dict(entries or {})
        self.used: set[str] = set()
        self.read = 0  # files read (digested) through this cache, for the tests that count them

    def digest(self, path: Path | str, status: os.stat_result | None = None) -> str:
        """The file's digest; `status` its os.stat, where the caller has it (a folder's listing gives it)."""
        key = str(path)
        self.used.add(key)
        status = status or os.stat(path)
        return self._known(key, status) or self._read(key, status)

    def _known(self, key: str, status: os.stat_result) -> str | None:
        """The recorded digest, if the entry names the file's size, time and inode and its time is older than the
        digest by more than RACY_NS; None otherwise (an entry that is not what `_read` writes included: its file
        is read again, so a wrong entry can only make a file be read)."""
        text = self.entries.get(key)
        if text is None:
            return None
        named = f"{status.st_size}:{status.st_mtime_ns}:{status.st_ino}:"
        if not text.startswith(named):
            return None
        digest, _, taken = text[len(named):].partition(":")
        if not digest or not (taken.isascii() and taken.isdigit()) or status.st_mtime_ns + RACY_NS >= int(taken):
            return None
        return digest

    def _read(self, key: str, status: os.stat_result) -> str:
        """The file read and digested, its entry recorded."""
        taken = time.time_ns()
        digest = digest_file(BIN_DIGEST, Path(key))
        self.read += 1
        self.entries[key] = f"{status.st_size}:{status.st_mtime_ns}:{status.st_ino}:{digest}:{taken}"
        return digest

    def settle(self) -> None:
        """Takes again each digest this run took within RACY_NS of its file's last change, once that change is older
        than RACY_NS and the file still has the size, time and inode it had: the next run then trusts it without
        reading the file. (Left racy, the first re-run after a run read every file written in the last two seconds
        of a stage: at 50,000 images, some 100 MB of bins and outputs. Issue 42.) A file changed since is left to
        the next run, which reads it."""
        now = time.time_ns()
        for key in self.used:
            fields = self.entries.get(key, "").split(":")
            if len(fields) != 5 or not all(field.isascii() and field.isdigit() for field in fields[:3] + fields[4:]):
                continue
            size, mtime, inode, taken = int(fields[0]), int(fields[1]), int(fields[2]), int(fields[4])
            if mtime + RACY_NS < taken or now <= mtime + RACY_NS:
                continue  # trusted already, or changed too lately to be trusted yet
            try:
                status = os.stat(key)
            except OSError:
                continue
            if (status.st_size, status.st_mtime_ns, status.st_ino) == (size, mtime, inode):
                self._read(key, status)

    def to_json(self) -> dict[str, str]:
        """The entries of the files this run looked at (a file no stage reads any more drops out), each one text:
        ``size:mtime_ns:inode:digest:taken_ns``, so a state file of 50,000 of them stays quick to read."""
        return {key: value for key, value in self.entries.items() if key in self.used}

    @classmethod
    def from_json(cls, data: Any) -> DigestCache:
        """What a state file holds; an entry that is not text is left out. The text is checked when its file is
        looked at (`_known`)."""
        if not isinstance(data, dict):
            return cls()
        return cls({key: value for key, value in data.items() if isinstance(value, str)})


def digest_path(path: Path, cache: DigestCache | None = None) -> str:
    """The digest of a file; for a folder, of the sorted (relative path, digest) list of every file in it; a
    missing path digests to "" so that its later appearance counts as a change. With `cache`, a file unchanged
    since its recorded digest is not read."""
    path = Path(path)
    if path.is_file():
        return cache.digest(path) if cache is not None else digest_file(BIN_DIGEST, path)
    if path.is_dir():
        # Listed with os.scandir, each file's status from the listing and its digest taken as it is listed (a
        # folder of 50,000 images is a second of Path objects and stat calls otherwise, and its listing's entries
        # are not all held at once). Sorted by path parts, as pathlib orders paths.
        if cache is not None:
            found = [(relative, cache.digest(entry.path, entry.stat())) for relative, entry in _files_under(
                str(path), "")]
        else:
            found = [(relative, digest_file(BIN_DIGEST, Path(entry.path))) for relative, entry in _files_under(
                str(path), "")]
        # A flat folder's names sort as they are; below it, by their parts ("a/b" after "a.png").
        found.sort(key=(lambda item: item[0].split("/")) if any("/" in r for r, _ in found) else (lambda i: i[0]))
        # hashed line by line: the same bytes as the joined listing, never held whole (3.5 MB at 50,000 files)
        return "dir:" + digest_pieces(BIN_DIGEST, (f"{relative}\0{digest}\n".encode() for relative, digest in found))
    return ""


def _files_under(folder: str, prefix: str) -> Iterator[tuple[str, os.DirEntry[str]]]:
    """Every file under `folder` (a link to a file too; links to folders are not entered), with its path relative
    to the folder first listed, as ``a/b.png``: what ``Path.rglob("*")`` and ``is_file()`` find."""
    below: list[tuple[str, str]] = []  # subfolders, entered after this one's files: its entries are not all held
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                relative = prefix + entry.name
                if entry.is_dir(follow_symlinks=False):
                    below.append((entry.path, relative + "/"))
                elif entry.is_file():
                    yield relative, entry
    except OSError:  # an unreadable folder: rglob passes over it too
        return
    for path, relative in below:
        yield from _files_under(path, relative)


def digest_paths(paths: Iterable[Path], cache: DigestCache | None = None) -> dict[str, str]:
    return {str(Path(p)): digest_path(Path(p), cache) for p in paths}


def settings_digest(settings: Mapping[str, Any]) -> str:
    """sha256 of a stage's settings, stable whatever the key order."""
    text = json.dumps(settings, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class StageRecord:
    stage: str
    settings: str  # settings_digest of the stage's settings
    inputs: dict[str, str]  # path -> digest_path of what it read
    outputs: dict[str, str]  # path -> digest_path of what it wrote
    summary: str  # the one line it printed
    facts: dict[str, Any] = field(default_factory=dict)  # what later stages need (run folder, verdict, ...)

    def to_json(self) -> dict[str, Any]:
        return {"settings": self.settings, "inputs": self.inputs, "outputs": self.outputs, "summary": self.summary,
                "facts": self.facts}

    @classmethod
    def from_json(cls, stage: str, data: Any, work_dir: Path) -> StageRecord | None:
        """The record a state file holds for `stage`; None when any of it is not what a stage writes (a text
        digest, path -> digest maps, facts of texts), or names an output outside `work_dir`: that stage runs
        again rather than trust it (hashing a path such a file names could read the whole disk)."""
        if not isinstance(data, dict):
            return None
        settings, summary = data.get("settings"), data.get("summary", "")
        inputs, outputs, facts = data.get("inputs"), data.get("outputs"), data.get("facts", {})
        if not (isinstance(settings, str) and isinstance(summary, str) and isinstance(inputs, dict)
                and isinstance(outputs, dict) and _digests(inputs) and _digests(outputs) and _facts(facts)):
            return None
        inside = Path(work_dir).resolve()
        if not all(_inside(Path(path), inside) for path in outputs):
            return None
        if not all(_inside(Path(value), inside) for key, value in facts.items() if key in _PATH_FACTS):
            return None
        return cls(stage=stage, settings=settings, inputs=dict(inputs), outputs=dict(outputs), summary=summary,
                   facts=dict(facts))

    def is_current(self, settings: str, inputs: Mapping[str, str], cache: DigestCache | None = None) -> bool:
        """Same settings and inputs as last time, and every output still as this stage wrote it."""
        if self.settings != settings or dict(self.inputs) != dict(inputs):
            return False
        return all(digest_path(Path(path), cache) == digest for path, digest in self.outputs.items())


def load_state(work_dir: Path) -> dict[str, StageRecord]:
    """The records of the last run; a missing, corrupt or foreign state file (or record) means: run everything
    (or that stage) again. Whatever the file holds, reading it raises nothing."""
    return load_state_and_digests(work_dir)[0]


def load_state_and_digests(work_dir: Path) -> tuple[dict[str, StageRecord], DigestCache]:
    """`load_state`, and the files' recorded digests (empty where the file has none it can trust)."""
    data = _state_document(Path(work_dir) / STATE_FILE)
    if data is None:
        return {}, DigestCache()
    return _records(data, work_dir), DigestCache.from_json(data.get("files"))


def _state_document(path: Path) -> dict[str, Any] | None:
    if special_kind(path) is not None:
        return None  # a FIFO would never end the read
    try:
        data = parse_json(read_bounded(path, limit=STATE_LIMIT, named=str(path), what="a pipeline state file"
                                       ).decode("utf-8"), named=str(path), what="a pipeline state file")
    except (OSError, ValueError, InferError):
        return None
    if not isinstance(data, dict) or data.get("schema") != STATE_SCHEMA or data.get("version") != STATE_VERSION:
        return None
    return data


def _records(data: dict[str, Any], work_dir: Path) -> dict[str, StageRecord]:
    stages = data.get("stages")
    if not isinstance(stages, dict):
        return {}
    records = {name: StageRecord.from_json(name, record, work_dir) for name, record in stages.items()}
    return {name: record for name, record in records.items() if record is not None}


# Facts that are paths a later stage reads (convert's artefact, run's folder): inside the work folder, as outputs.
_PATH_FACTS = ("artefact", "run_folder")


def _digests(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())


def _facts(value: Any) -> bool:
    """Facts as the stages write them: texts and numbers, or lists of them (a command line); the paths among them
    texts."""
    def plain(item: Any) -> bool:
        return item is None or isinstance(item, (str, int, float))

    return isinstance(value, dict) and all(
        (plain(v) or (isinstance(v, list) and all(plain(item) for item in v)))
        and (key not in _PATH_FACTS or isinstance(v, str)) for key, v in value.items())


def _inside(path: Path, folder: Path) -> bool:
    try:
        return path.resolve().is_relative_to(folder)
    except (OSError, RuntimeError, ValueError):  # a link loop, a NUL
        return False


def save_state(work_dir: Path, records: Mapping[str, StageRecord], cache: DigestCache | None = None) -> None:
    document: dict[str, Any] = {"schema": STATE_SCHEMA, "version": STATE_VERSION,
                                "stages": {name: record.to_json() for name, record in records.items()}}
    if cache is not None:
        cache.settle()
        document["files"] = cache.to_json()
    write_json_atomic(Path(work_dir) / STATE_FILE, document)
