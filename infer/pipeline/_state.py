"""The pipeline's memory: per stage, the digest of everything it read and wrote, and its settings.

A stage is skipped on a re-run when its settings, the digest of every input and the digest of every output it
wrote are all what they were when it last ran: nothing it depends on changed and nothing it made was touched.
The state file lives in the work folder and is written atomically after each stage, with the digests it took and
what each file was then (`infer.pipeline._digests`), so that a re-run reads only the files that changed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from binio.atomic import write_json_atomic
from binio.errors import InferError
from binio.reading import parse_json, read_bounded
from binio.regular import special_kind
from infer.pipeline._digests import DigestCache, digest_path

STATE_FILE = "pipeline-state.json"
STATE_SCHEMA = "infer.pipeline-state"
# 2: files digested with XXH3-128 (1: sha256). "folders" came later within 2: a file without it has each folder's
# files under "files", whose entries still spare the re-run a read (`DigestCache.folder_digest`).
STATE_VERSION = 2
STATE_LIMIT = 64 * 2**20  # a record per stage, a digest per output: kilobytes; a larger file is not one infer wrote


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
    return _records(data, work_dir), DigestCache.from_json(data)


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
        document.update(cache.to_json())
    write_json_atomic(Path(work_dir) / STATE_FILE, document)
