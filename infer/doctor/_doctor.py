"""`infer doctor`: what is installed, whether it is the combination we test, and what will run for real.

Nothing here imports TensorFlow, ONNX or ONNX Runtime: versions come from the installed distributions' metadata
(importlib.metadata), tools are looked up on PATH and under ASCEND_TOOLKIT_HOME, and none of them is started.
"""

from __future__ import annotations

import os
import platform
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from infer.doctor._packages import check_packages
from infer.doctor._tables import check_op_tables
from infer.doctor._tools import check_tools, devlib_entry, find_set_env
from infer.doctor._versions import version_in_range
from infer.doctor.result import DoctorReport, PackageCheck, StagePlan, ToolCheck


def _check_temp(temp_dir: Path) -> tuple[bool, str]:
    try:
        with tempfile.NamedTemporaryFile(dir=temp_dir, prefix=".infer-doctor-") as handle:
            handle.write(b"ok")
            handle.flush()
    except OSError as exc:
        return False, exc.strerror or str(exc)
    return True, ""


def plan_stages(packages: Sequence[PackageCheck], tools: Sequence[ToolCheck]) -> tuple[StagePlan, ...]:
    """Which stages run the real thing here, and which the stand-in (or cannot run at all)."""
    have = {p.name: p.installed for p in packages}
    found = {t.name: t.found for t in tools}
    tf = have["tensorflow"]
    plans = [
        StagePlan("inspect/freeze", tf, "TensorFlow" if tf else "cannot run: TensorFlow is not installed"),
    ]
    if found["atc"]:
        plans.append(StagePlan("convert", True, "ATC (pb -> om)"))
    else:
        plans.append(StagePlan("convert", False, "tf2onnx -> ONNX, ATC's precision mode emulated"
                               if have["tf2onnx"] and have["onnx"] else "cannot run: tf2onnx/onnx not installed"))
    plans.append(StagePlan("dump-bin", True, "numpy (+ Pillow for images)"))
    device_runner = "msame" if found["msame"] else "ais_bench" if found["ais_bench"] else ""
    if device_runner and found["atc"]:
        plans.append(StagePlan("run", True, f"{device_runner} on the NPU"))
    elif device_runner:
        plans.append(StagePlan("run", True, f"{device_runner} on the NPU (for an .om converted elsewhere); the "
                               "ONNX stand-in otherwise"))
    else:
        plans.append(StagePlan("run", False, "ONNX Runtime" if have["onnxruntime"]
                               else "cannot run: onnxruntime is not installed"))
    plans.append(StagePlan("compare", tf, "TensorFlow golden outputs" if tf
                           else "cannot compute golden outputs: TensorFlow is not installed"))
    return tuple(plans)


def diagnose(env: Mapping[str, str] | None = None, temp_dir: Path | None = None) -> DoctorReport:
    """Looks at this machine and returns what it found; starts no tool and imports no framework."""
    env = os.environ if env is None else env
    packages, requires_python = check_packages()
    python = platform.python_version()
    home_value = env.get("ASCEND_TOOLKIT_HOME", "")
    home = Path(home_value) if home_value else None
    tools = check_tools(home)
    temp = Path(temp_dir) if temp_dir is not None else Path(tempfile.gettempdir())
    writable, temp_error = _check_temp(temp)
    return DoctorReport(
        python=python, python_range=requires_python,
        python_in_range=version_in_range(python, requires_python) if requires_python else None,
        platform=f"{platform.system()} {platform.machine()}", packages=packages, tools=tools,
        toolkit_home=home_value, toolkit_home_exists=bool(home and home.is_dir()),
        set_env=find_set_env(home), devlib=devlib_entry(env), temp_dir=str(temp), temp_writable=writable,
        temp_error=temp_error, stages=plan_stages(packages, tools), op_tables=check_op_tables(),
    )
