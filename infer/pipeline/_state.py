"""The pipeline's memory: per stage, the digest of everything it read and wrote, and its settings.

A stage is skipped on a re-run when its settings, the digest of every input and the digest of every output it
wrote are all what they were when it last ran: nothing it depends on changed and nothing it made was touched.
The state file lives in the work folder and is written atomically after each stage. Files are digested as bins
are (XXH3-128, `binio.digest`): a re-run reads every bin the stages made, and sha256 made that check cost 0.4 s of
CPU per 600 MB of bins, where XXH3-128 costs a few hundredths.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from binio.atomic import write_json_atomic
from binio.digest import BIN_DIGEST, digest_bytes, digest_file

STATE_FILE = "pipeline-state.json"
STATE_SCHEMA = "infer.pipeline-state"
STATE_VERSION = 2  # 2: files digested with XXH3-128 (1: sha256)


def digest_path(path: Path) -> str:
    """The digest of a file; for a folder, of the sorted (relative path, digest) list of every file in it; a
    missing path digests to "" so that its later appearance counts as a change."""
    path = Path(path)
    if path.is_file():
        return digest_file(BIN_DIGEST, path)
    if path.is_dir():
        listing = "".join(f"{item.relative_to(path).as_posix()}\0{digest_file(BIN_DIGEST, item)}\n"
                          for item in sorted(p for p in path.rglob("*") if p.is_file()))
        return "dir:" + digest_bytes(BIN_DIGEST, listing.encode())
    return ""


def digest_paths(paths: Iterable[Path]) -> dict[str, str]:
    return {str(Path(p)): digest_path(Path(p)) for p in paths}


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
    def from_json(cls, stage: str, data: Mapping[str, Any]) -> StageRecord:
        return cls(stage=stage, settings=str(data["settings"]), inputs=dict(data["inputs"]),
                   outputs=dict(data["outputs"]), summary=str(data.get("summary", "")),
                   facts=dict(data.get("facts", {})))

    def is_current(self, settings: str, inputs: Mapping[str, str]) -> bool:
        """Same settings and inputs as last time, and every output still as this stage wrote it."""
        if self.settings != settings or dict(self.inputs) != dict(inputs):
            return False
        return all(digest_path(Path(path)) == digest for path, digest in self.outputs.items())


def load_state(work_dir: Path) -> dict[str, StageRecord]:
    """The records of the last run; a missing, corrupt or foreign state file means: run everything."""
    path = Path(work_dir) / STATE_FILE
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("schema") != STATE_SCHEMA or data.get("version") != STATE_VERSION:
        return {}
    try:
        return {name: StageRecord.from_json(name, record) for name, record in dict(data["stages"]).items()}
    except (KeyError, TypeError, ValueError):
        return {}


def save_state(work_dir: Path, records: Mapping[str, StageRecord]) -> None:
    document = {"schema": STATE_SCHEMA, "version": STATE_VERSION,
                "stages": {name: record.to_json() for name, record in records.items()}}
    write_json_atomic(Path(work_dir) / STATE_FILE, document)
