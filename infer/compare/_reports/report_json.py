"""report.json: every number of the comparison, written from the result dataclasses."""

from __future__ import annotations

from pathlib import Path

from binio.atomic import write_json_atomic
from infer.compare.result import CompareResult

REPORT_JSON = "report.json"


def write_report_json(result: CompareResult, folder: Path) -> Path:
    path = Path(folder) / REPORT_JSON
    write_json_atomic(path, result.document())
    return path
