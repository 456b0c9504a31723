"""The ``gear`` part of run.json: the gear msame or ais_bench ran a model with gears at, the flags that named it,
and the output files trimmed to its real size where the tool wrote its whole buffer (msame for image-size and dims
gears: docs/ascend-tools.md, Gears)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from binio.fields import Fields
from binio.gears import gear_from_fields, gear_json


@dataclass(frozen=True)
class TrimmedOutput:
    """One output whose files the tool wrote larger than the gear's output: each cut to `kept_bytes`."""

    output: str  # the output's tensor name
    written_bytes: int  # what the tool wrote per file (its buffer, the largest gear's)
    kept_bytes: int  # the gear's real size: its shape at the gear x its dtype
    files: int

    def to_json(self) -> dict[str, Any]:
        return {"output": self.output, "written_bytes": self.written_bytes, "kept_bytes": self.kept_bytes,
                "files": self.files}


@dataclass(frozen=True)
class GearRecord:
    """The gear a tool ran at."""

    kind: str  # batch, image_size, dims, range
    values: tuple[int, ...]
    label: str  # ``image size 224x448``
    flags: tuple[str, ...]  # what named it on the tool's command line
    trimmed: tuple[TrimmedOutput, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {**gear_json(self.kind, self.values), "label": self.label, "flags": list(self.flags),
                "trimmed": [t.to_json() for t in self.trimmed]}

    @classmethod
    def from_fields(cls, fields: Fields) -> GearRecord:
        kind, values = gear_from_fields(fields)  # dataset.json's gear, with run's own keys beside it
        trimmed = tuple(TrimmedOutput(output=item.text("output"), written_bytes=item.integer("written_bytes",
                                                                                               minimum=0),
                                      kept_bytes=item.integer("kept_bytes", minimum=0),
                                      files=item.integer("files", minimum=0))
                        for item in fields.children("trimmed", []))
        return cls(kind=kind, values=values, label=fields.text("label", ""), flags=fields.texts("flags", []),
                   trimmed=trimmed)
