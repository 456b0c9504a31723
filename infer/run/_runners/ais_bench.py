"""ais_bench: ``python3 -m ais_bench --model m.om --input dir1,dir2 --output OUT --outfmt BIN [--device D]``.

It writes ``OUT/<%Y_%m_%d-%H_%M_%S>/<stem>_<i>.bin`` and ``OUT/<that folder>_summary.json`` (NPU_compute_time
mean / median / 99th percentile, throughput); `infer run` renames its outputs into msame's layout.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path, PurePath
from typing import Any

from binio.process import run_tool
from binio.reading import parse_json, read_text_file
from infer.run._runners.base import RunnerError
from infer.run._runners.tool import ToolRun, ToolRunner, ToolTimings, failure_line
from infer.run.layout import AIS_BENCH_FOLDER_FORMAT

FOLDER_FORMAT = AIS_BENCH_FOLDER_FORMAT
_MISSING = "No module named ais_bench"
_PROBE_TIMEOUT_S = 120.0  # `--help` imports ais_bench and its ACL bindings: seconds, not minutes


def _number(table: dict[str, Any], *keys: str) -> float | None:
    for key in keys:
        value = table.get(key)
        if isinstance(value, (int, float)):
            return float(value)
    return None


def newest_ais_folder(out: Path) -> Path:
    stamped = []
    for path in out.iterdir():
        try:
            stamped.append((datetime.strptime(path.name, FOLDER_FORMAT), path))
        except ValueError:
            continue
    if not stamped:
        raise RunnerError(f"{out}: ais_bench left no output folder (expected e.g. 2024_01_01-12_00_00)")
    return max(stamped)[1]


class AisBenchRunner(ToolRunner):
    backend = "ais_bench"
    tool = "ais_bench"
    python = sys.executable  # ais_bench is a Python package: the interpreter infer runs in must have it

    def find(self) -> None:
        # Found by running it: the package may live in this interpreter's site-packages or on PYTHONPATH.
        # The probe is bounded by the run's own --timeout: a user who allows 10 s does not wait two minutes here.
        probe = run_tool([self.python, "-m", "ais_bench", "--help"], timeout=min(self.timeout, _PROBE_TIMEOUT_S))
        if _MISSING in probe.output:
            raise self.not_installed(f"{self.python} -m ais_bench: {_MISSING}")

    def launcher(self, *, planned: bool = False) -> list[str]:
        return ["python3" if planned else self.python, "-m", "ais_bench"]

    def tool_options(self, acl_json: PurePath | None = None) -> list[str]:
        options = []
        if self.warmup or acl_json is not None:  # its own default is one warm-up run, which a dump would hold
            options += ["--warmup_count", str(self.warmup)]
        if acl_json is not None:
            options += ["--acl_json_path", str(acl_json)]
        return options

    def run_folders(self, input_dirs: Sequence[Path], stems: Sequence[str], work: Path) -> ToolRun:
        work.mkdir(parents=True, exist_ok=True)
        result = self.execute(input_dirs, work)
        error = failure_line(result)
        if _MISSING in result.output:
            raise self.not_installed(f"{self.python} -m ais_bench: {_MISSING}")
        if result.returncode != 0 or error is not None:
            last = result.lines[-1] if result.lines else "no output"
            raise self.failed(result, error or last)
        folder = newest_ais_folder(work)
        return ToolRun(command=result.argv, folder=folder, seconds=result.seconds,
                       files=self.collect(folder, stems, result, "{stem}_{index}.bin"),
                       timings=self.summary(work / f"{folder.name}_summary.json"))

    @staticmethod
    def summary(path: Path) -> ToolTimings:
        if not path.is_file():
            raise RunnerError(f"{path}: ais_bench wrote no summary")
        data = parse_json(read_text_file(path, what="ais_bench's summary", error=RunnerError), named=str(path),
                          what="ais_bench's summary", error=RunnerError)
        compute = data.get("NPU_compute_time", {}) if isinstance(data, dict) else {}
        compute = compute if isinstance(compute, dict) else {}
        throughput = data.get("throughput") if isinstance(data, dict) else None
        return ToolTimings(
            mean_ms=_number(compute, "mean"), p50_ms=_number(compute, "median"),
            p99_ms=_number(compute, "percentile(99%)", "p99"),
            throughput=float(throughput) if isinstance(throughput, (int, float)) else None,
        )
