"""The folder compare writes into (`--report`, `--dump-golden`): checked, and locked from before the comparison
runs until it is written; `write_reports` writes the three report files of one comparison into it."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from binio.errors import InferError
from binio.lock import folder_lock
from binio.output import check_output
from infer.compare._reports.report_csv import write_provenance_sidecar, write_report_csv
from infer.compare._reports.report_html import write_report_html
from infer.compare._reports.report_json import write_report_json
from infer.compare.result import CompareResult


def write_reports(result: CompareResult, folder: Path) -> tuple[Path, ...]:
    """report.json, report.csv (with report.provenance.json beside it) and report.html in `folder` (created when
    missing), each written atomically."""
    folder = Path(folder)
    return (write_report_json(result, folder), write_report_csv(result, folder),
            write_provenance_sidecar(result, folder), write_report_html(result, folder))


@contextlib.contextmanager
def output_folder(folder: Path, *, option: str, force: bool, hint: str) -> Iterator[Path]:
    """A folder compare writes into (`option` names it): checked (an existing one holding anything is written into
    only with `force`) and locked for this compare, from before the comparison runs until it is written."""
    check_output_folder(folder, option)
    with folder_lock(folder, command=f"compare {option}"):
        check_output(folder, force=force, hint=hint)
        yield Path(folder)


def report_folder(folder: Path, *, force: bool) -> contextlib.AbstractContextManager[Path]:
    """The --report folder, checked and locked (`output_folder`)."""
    return output_folder(folder, option="--report", force=force, hint="pass --force to replace its reports")


def check_output_folder(path: Path, option: str) -> None:
    """Refuses, before anything runs, a folder to write into that is a file."""
    if Path(path).exists() and not Path(path).is_dir():
        raise InferError(f"{option} {path}: is a file; expected a folder to write into")
