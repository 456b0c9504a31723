"""What `infer dump-bin` wrote (`DumpResult`): the manifest, and for each input what the cast to its dtype did."""

from __future__ import annotations

from dataclasses import dataclass

from binio.cast import CastReport
from binio.manifest import DatasetManifest


@dataclass(frozen=True)
class InputDump:
    """What was written for one input, and what the cast to its dtype did."""

    tensor: str
    folder: str
    dtype: str
    shape: tuple[int, ...]
    source: str
    cast: CastReport


@dataclass(frozen=True)
class DumpResult:
    manifest: DatasetManifest
    inputs: tuple[InputDump, ...]
    files_written: int  # per-input files written in this run
    files_kept: int  # files already there with the same bytes (a resumed run)
