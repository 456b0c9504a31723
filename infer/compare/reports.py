"""Writes the three report files of one comparison into a folder."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from binio.errors import InferError
from binio.lock import folder_lock
from binio.output import check_output
from infer.compare.report_csv import write_provenance_sidecar, write_report_csv
from infer.compare.report_html import write_report_html
from infer.compare.report_json import write_report_json
from infer.compare.result import CompareResult


def write_reports(result: CompareResult, folder: Path) -> tuple[Path, ...]:
    """report.json, report.csv (with report.provenance.json beside it) and report.html in `folder` (created when
    missing), each written atomically."""
    folder = Path(folder)
    return (write_report_json(result, folder), write_report_csv(result, folder),
            write_provenance_sidecar(result, folder), write_report_html(result, folder))


@contextlib.contextmanager
def report_folder(folder: Path, *, force: bool) -> Iterator[Path]:
    """`folder` checked (an existing one is replaced only with `force`) and locked for this compare, from before
    the comparison runs until its reports are written."""
    check_output_folder(folder, "--report")
    with folder_lock(folder, command="compare --report"):
        check_output(folder, force=force, hint="pass --force to replace its reports")
        yield Path(folder)


def check_output_folder(path: Path, option: str) -> None:
    """Refuses, before anything runs, a folder to write into that is a file."""
    if Path(path).exists() and not Path(path).is_dir():
        raise InferError(f"{option} {path}: is a file; expected a folder to write into")
