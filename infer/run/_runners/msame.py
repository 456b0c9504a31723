"""msame: ``msame --model m.om --input dir1,dir2 --output OUT --outfmt BIN [--device D] [--loop N]``.

msame exits 0 on many failures, so success is its ``Execute sample success`` line and no ``[ERROR]`` line,
whatever the exit code. It writes ``OUT/<timestamp>/<stem>_output_<i>.bin`` with a timestamp in one of two forms
(`infer.run.layout` reads both) and prints ``Inference average time: X ms``.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path, PurePath

import numpy as np

from binio.process import find_tool
from infer.run._runners.tool import ToolRun, ToolRunner, ToolTimings, failure_line, folder_argv, timings_from_batches
from infer.run.layout import newest_run_folder

log = logging.getLogger(__name__)
SUCCESS = "Execute sample success"
_AVERAGE = re.compile(r"Inference average time\s*:\s*([0-9.]+)\s*ms")
_SINGLE = re.compile(r"^\s*Inference time\s*:\s*([0-9.]+)\s*ms")


def _ascend_dirs() -> list[Path]:
    """Where msame sits when it was built from the samples but not put on PATH."""
    home = os.environ.get("ASCEND_TOOLKIT_HOME") or os.environ.get("ASCEND_HOME")
    return [Path(home) / "tools" / "msame", Path(home) / "tools" / "msame" / "out"] if home else []


def msame_timings(lines: Sequence[str], *, loop: int, batches: int) -> ToolTimings:
    """msame's own figures: its ``Inference average time`` as the mean, its per-file ``Inference time`` lines
    as the per-batch latencies (with --loop N it runs the whole folder N times; a batch's latency is its mean)."""
    average = next((float(m.group(1)) for line in lines if (m := _AVERAGE.search(line))), None)
    singles = [float(m.group(1)) for line in lines if (m := _SINGLE.match(line))]
    timings = timings_from_batches(singles, average)
    if loop > 1 and len(singles) == loop * batches:
        per_batch = np.asarray(singles).reshape(loop, batches).mean(axis=0)
        timings = replace(timings, per_batch_ms=tuple(float(t) for t in per_batch))
    return timings


def msame_argv(executable: str, om: PurePath, input_dirs: Sequence[PurePath], out: PurePath, *,
               device: int | None = None, loop: int = 1) -> list[str]:
    """msame's command line in folder mode, one folder per model input: what the runner runs and what the
    pipeline report prints for an Ascend machine."""
    return folder_argv([executable], om, input_dirs, out, device=device, loop=loop)


class MsameRunner(ToolRunner):
    backend = "msame"
    tool = "msame"

    def find(self) -> None:
        if self.warmup > 1:
            log.info("msame has no warm-up option; its own average leaves out the first run, --warmup is ignored")
        found = find_tool("msame", extra_dirs=_ascend_dirs())
        if found is None:
            raise self.not_installed("not found on PATH")
        self.executable = found

    def launcher(self, *, planned: bool = False) -> list[str]:
        return ["msame" if planned else str(self.executable)]

    def run_folders(self, input_dirs: Sequence[Path], stems: Sequence[str], work: Path) -> ToolRun:
        work.mkdir(parents=True, exist_ok=True)
        # msame reads ./acl.json wherever it runs (sample_process.cpp InitResource): a dump start runs beside it
        result = self.execute(input_dirs, work, cwd=self.acl_json.parent if self.acl_json is not None else None)
        error = failure_line(result)
        if error is not None:
            raise self.failed(result, error)
        if SUCCESS not in result.output:
            raise self.failed(result, f"no '{SUCCESS}' line; last line: {result.lines[-1] if result.lines else ''}")
        folder = newest_run_folder(work)
        return ToolRun(command=result.argv, folder=folder, seconds=result.seconds,
                       timings=msame_timings(result.lines, loop=self.loop, batches=len(stems)),
                       files=self.collect(folder, stems, result, "{stem}_output_{index}.bin"))
