"""The Ascend side of this machine: atc, msame and ais_bench on PATH or under ASCEND_TOOLKIT_HOME, their versions,
the CANN environment (set_env.sh, the devlib entry of LD_LIBRARY_PATH); none of them is started."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path

from atc_wrap.atc.run import ATC_SUBDIRS
from binio.process import find_tool
from infer.doctor._packages import (
    _installed_version,
)
from infer.doctor.result import ToolCheck

_SET_ENV_CANDIDATES = ("set_env.sh", "../set_env.sh", "bin/setenv.bash")


_DEFAULT_TOOLKIT = Path("/usr/local/Ascend/ascend-toolkit")


def _toolkit_dirs(home: Path | None) -> list[Path]:
    return [home / sub for sub in ATC_SUBDIRS] if home is not None else []


def _version_file_value(path: Path) -> str:
    """The ``version=`` (or ``Version=``) value of a CANN version.info / *_install.info file."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    match = re.search(r"^\s*version\s*=\s*(\S+)", text, flags=re.IGNORECASE | re.MULTILINE)
    return match.group(1) if match else ""


def _toolkit_version(tool_path: Path, home: Path | None) -> tuple[str, str]:
    """CANN tools have no --version flag; their package's version.info (beside bin/) says which CANN they are."""
    candidates = [tool_path.resolve().parent.parent / "version.info"]
    if home is not None:
        candidates += [home / "compiler" / "version.info", *sorted(home.glob("*-linux/ascend_toolkit_install.info"))]
    for candidate in candidates:
        if candidate.is_file() and (value := _version_file_value(candidate)):
            return value, f"version from {candidate}"
    return "", "no version file found beside it"


def check_tools(home: Path | None) -> tuple[ToolCheck, ...]:
    atc = find_tool("atc", extra_dirs=_toolkit_dirs(home))
    if atc is None:
        where = "PATH" + (f" and {', '.join(str(d) for d in _toolkit_dirs(home))}" if home else "")
        atc_check = ToolCheck("atc", "", "", f"not on {where}")
    else:
        version, note = _toolkit_version(atc, home)
        atc_check = ToolCheck("atc", str(atc), version, note)

    msame = find_tool("msame")
    msame_check = (ToolCheck("msame", str(msame), "", "msame prints no version; it is built from Ascend's tools "
                             "repository") if msame else ToolCheck("msame", "", "", "not on PATH"))

    spec = importlib.util.find_spec("ais_bench")
    if spec is None:
        ais_check = ToolCheck("ais_bench", "", "", f"no ais_bench module for {sys.executable}")
    else:
        version = next((v for d in ("ais_bench", "ais-bench", "aclruntime") if (v := _installed_version(d))), "")
        origin = spec.origin or next(iter(spec.submodule_search_locations or [""]))
        ais_check = ToolCheck("ais_bench", str(origin), version,
                              f"python module ({sys.executable} -m ais_bench)" if version else "python module; "
                              "no distribution metadata gives its version")
    return atc_check, msame_check, ais_check


def find_set_env(home: Path | None) -> str:
    roots = [home] if home is not None else []
    roots.append(_DEFAULT_TOOLKIT)
    for root in roots:
        for relative in _SET_ENV_CANDIDATES:
            candidate = root / relative
            if candidate.is_file():
                return str(candidate.resolve())
    return ""


def devlib_entry(env: Mapping[str, str]) -> str:
    """The LD_LIBRARY_PATH entry ATC needs on a machine without an NPU driver (``<arch>-linux/devlib``)."""
    for entry in env.get("LD_LIBRARY_PATH", "").split(os.pathsep):
        if entry.rstrip("/").endswith("devlib"):
            return entry
    return ""
