"""What `infer bin-info` found (`BinInfoReport`): a row of statistics per input or per file, what was verified
and exported."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from binio.info import TensorStats


@dataclass(frozen=True)
class InfoRow:
    label: str  # ``images:0 (5 files, 9 samples + 1 padding)`` or ``images/000000.bin``
    stats: TensorStats  # over the real rows; padding rows are not data


@dataclass(frozen=True)
class DumpTensorInfo:
    """One input or output of an NPU dump file: the device's description, and the plain array made of it."""

    role: str  # input, output
    index: int
    dtype: str
    format: str  # the device layout: NC1HWC0, FRACTAL_NZ, ND, ...
    shape: tuple[int, ...]
    original_name: str  # outputs: the TF tensor it holds (``relu:0``), from the om or the dump; "" if unknown
    origin_format: str  # the layout it was turned back into ("" where it was left as the device holds it)
    origin_shape: tuple[int, ...] | None
    origin_from: str  # "om", "dump" (whose origin format and shape), or "" (left in the device layout)
    stats: TensorStats | None  # of the plain array; None when its bytes cannot be read as numbers
    note: str = ""  # why it was left in the device layout, or not read

    def to_json(self) -> dict[str, Any]:
        return {"role": self.role, "index": self.index, "dtype": self.dtype, "format": self.format,
                "shape": list(self.shape), "original_name": self.original_name, "origin_format": self.origin_format,
                "origin_shape": None if self.origin_shape is None else list(self.origin_shape),
                "origin_from": self.origin_from, "note": self.note,
                "stats": None if self.stats is None else self.stats.to_json()}


@dataclass(frozen=True)
class DumpOpInfo:
    """One NPU dump file: the op it is of (and, with the om, what that op fuses) and its tensors."""

    path: Path
    op_type: str  # from the file name
    op_name: str  # DumpData.op_name: the om op's name
    fused_nodes: tuple[str, ...]  # with --om: the TF nodes the om op computes
    tensors: tuple[DumpTensorInfo, ...]
    unknown_fields: tuple[str, ...]  # fields of a newer DumpData, skipped

    def to_json(self) -> dict[str, Any]:
        return {"path": str(self.path), "op_type": self.op_type, "op_name": self.op_name,
                "fused_nodes": list(self.fused_nodes), "unknown_fields": list(self.unknown_fields),
                "tensors": [t.to_json() for t in self.tensors]}


@dataclass(frozen=True)
class BinInfoReport:
    title: str
    rows: tuple[InfoRow, ...]
    verified: int = 0  # files whose size and digest were re-checked
    exported: tuple[Path, ...] = ()
    dump_ops: tuple[DumpOpInfo, ...] = ()  # an NPU dump file or folder: each file's op and tensors
    notes: tuple[str, ...] = ()  # what the rows do not say: tensors left unread, files that cannot be read

    def to_json(self) -> dict[str, object]:
        return {"schema": "infer.bin-info", "version": 1, "title": self.title, "verified": self.verified,
                "exported": [str(p) for p in self.exported],
                "rows": [{"label": r.label, **r.stats.to_json()} for r in self.rows],
                **({"dump_ops": [op.to_json() for op in self.dump_ops]} if self.dump_ops else {}),
                **({"notes": list(self.notes)} if self.notes else {})}
