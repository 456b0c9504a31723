"""What `infer bin-info` found (`BinInfoReport`): a row of statistics per input or per file, what was verified
and exported."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from binio.info import TensorStats


@dataclass(frozen=True)
class InfoRow:
    label: str  # ``images:0 (5 files, 9 samples + 1 padding)`` or ``images/000000.bin``
    stats: TensorStats  # over the real rows; padding rows are not data


@dataclass(frozen=True)
class BinInfoReport:
    title: str
    rows: tuple[InfoRow, ...]
    verified: int = 0  # files whose size and digest were re-checked
    exported: tuple[Path, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {"title": self.title, "verified": self.verified, "exported": [str(p) for p in self.exported],
                "rows": [{"label": r.label, **r.stats.to_json()} for r in self.rows]}
