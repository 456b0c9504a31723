"""The ``dump`` part of run.json: what `infer run --dump` asked msame or ais_bench to dump, and where it landed.

Kept apart from the run itself so `infer compare --npu-dump` reads which batch a dump is of without importing the
runners. Paths are relative to the run folder, which travels whole.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from binio.fields import Fields
from infer.run.options import DUMP_MODES

DUMP_FOLDER = "dump"  # under the run folder: acl.json's dump_path
ACL_JSON = "acl.json"


@dataclass(frozen=True)
class DumpRecord:
    """One dumped execution of the model: the batch, the acl.json that asked for it, the files it left."""

    folder: str  # the dump_path, relative to the run folder (``dump``)
    mode: str  # acl.json's dump_mode: output, input or all
    stem: str  # the batch dumped (its input files' stem): the one execution of the dump's start
    model_name: str  # acl.json's dump_list model_name: the om's file name without its extension
    acl_json: str  # the configuration written, relative to the run folder
    step_folders: tuple[str, ...]  # {time}/{device}/{model_name}/{model_id}/{step}, relative to `folder`
    files: int  # dump files found under `folder`
    tool_command: tuple[str, ...]  # the dump start's argv

    def path(self, run_folder: Path) -> Path:
        return Path(run_folder) / self.folder

    def to_json(self) -> dict[str, Any]:
        return {"folder": self.folder, "mode": self.mode, "stem": self.stem, "model_name": self.model_name,
                "acl_json": self.acl_json, "step_folders": list(self.step_folders), "files": self.files,
                "tool_command": list(self.tool_command)}

    @classmethod
    def from_fields(cls, fields: Fields, run_folder: Path) -> DumpRecord:
        mode = fields.text("mode")
        if mode not in DUMP_MODES:
            raise fields.refuse("mode", f"expected one of {', '.join(DUMP_MODES)}, found {mode!r}")
        folder = fields.relative("folder", run_folder)
        return cls(folder=folder, mode=mode, stem=fields.name("stem", run_folder, follow_links=False),
                   model_name=fields.text("model_name"), acl_json=fields.relative("acl_json", run_folder),
                   step_folders=fields.texts("step_folders", []),
                   files=fields.integer("files", 0, minimum=0), tool_command=fields.texts("tool_command", []))
