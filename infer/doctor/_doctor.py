"""`infer doctor`: what is installed, whether it is the combination we test, and what will run for real.

Nothing here imports TensorFlow, ONNX or ONNX Runtime: versions come from the installed distributions' metadata
(importlib.metadata), tools are looked up on PATH and under ASCEND_TOOLKIT_HOME, and none of them is started.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import platform
import re
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from atc_wrap.atc_run import ATC_SUBDIRS
from binio.process import find_tool
from infer._version import __version__

DISTRIBUTION = "infer"
_RANGE_PACKAGES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("tensorflow", ("tensorflow-cpu", "tensorflow", "tensorflow-aarch64", "tensorflow-macos")),
    ("tf2onnx", ("tf2onnx",)),
    ("onnx", ("onnx",)),
    ("onnxruntime", ("onnxruntime", "onnxruntime-gpu")),
    ("numpy", ("numpy",)),
    ("xxhash", ("xxhash",)),
)
_SET_ENV_CANDIDATES = ("set_env.sh", "../set_env.sh", "bin/setenv.bash")
_DEFAULT_TOOLKIT = Path("/usr/local/Ascend/ascend-toolkit")


@dataclass(frozen=True)
class PackageCheck:
    """One Python package: its installed version and the range pyproject.toml declares (tested)."""

    name: str
    distribution: str  # the distribution found installed ("tensorflow-cpu"); "" when none is
    version: str  # "" when not installed
    tested_range: str  # e.g. ">=2.16,<2.22"; "" when the range is unknown (infer not installed as a package)

    @property
    def installed(self) -> bool:
        return bool(self.version)

    @property
    def in_range(self) -> bool | None:
        """True/False against the tested range; None when there is no range to check against."""
        if not self.version or not self.tested_range:
            return None
        return version_in_range(self.version, self.tested_range)


@dataclass(frozen=True)
class ToolCheck:
    """One Ascend tool: where it was found and its version, or why it was not."""

    name: str
    path: str  # "" when not found
    version: str  # "" when unknown
    note: str  # how it was looked up, or what its version came from

    @property
    def found(self) -> bool:
        return bool(self.path)


@dataclass(frozen=True)
class StagePlan:
    """What one stage will use on this machine."""

    stage: str
    real: bool  # True: the real tool/framework; False: the stand-in
    uses: str


@dataclass(frozen=True)
class DoctorReport:
    python: str
    python_range: str
    python_in_range: bool | None
    platform: str
    packages: tuple[PackageCheck, ...]
    tools: tuple[ToolCheck, ...]
    toolkit_home: str  # ASCEND_TOOLKIT_HOME, "" when unset
    toolkit_home_exists: bool
    set_env: str  # the set_env.sh found, "" when none
    devlib: str  # the LD_LIBRARY_PATH entry ending in devlib, "" when none
    temp_dir: str
    temp_writable: bool
    temp_error: str
    stages: tuple[StagePlan, ...]
    infer_version: str = __version__

    def package(self, name: str) -> PackageCheck:
        return next(p for p in self.packages if p.name == name)

    def tool(self, name: str) -> ToolCheck:
        return next(t for t in self.tools if t.name == name)

    @property
    def tested_combination(self) -> bool:
        """Every package installed and inside its tested range, and the Python inside its range."""
        return self.python_in_range is not False and all(p.in_range for p in self.packages)

    def to_json(self) -> dict[str, object]:
        return {
            "infer": {"version": self.infer_version},
            "python": {"version": self.python, "range": self.python_range, "in_range": self.python_in_range},
            "platform": self.platform,
            "packages": [{"name": p.name, "distribution": p.distribution, "version": p.version,
                          "tested_range": p.tested_range, "in_range": p.in_range} for p in self.packages],
            "tested_combination": self.tested_combination,
            "tools": [{"name": t.name, "found": t.found, "path": t.path, "version": t.version, "note": t.note}
                      for t in self.tools],
            "ascend_toolkit_home": self.toolkit_home, "ascend_toolkit_home_exists": self.toolkit_home_exists,
            "set_env": self.set_env, "devlib": self.devlib,
            "temp_dir": {"path": self.temp_dir, "writable": self.temp_writable, "error": self.temp_error},
            "stages": [{"stage": s.stage, "real": s.real, "uses": s.uses} for s in self.stages],
        }


def _release(version: str) -> tuple[int, ...]:
    """``2.21.0rc1`` -> (2, 21, 0): the numeric release part, enough to compare against our ranges."""
    parts: list[int] = []
    for piece in version.split("."):
        match = re.match(r"\d+", piece)
        if not match:
            break
        parts.append(int(match.group()))
        if match.end() < len(piece):
            break
    return tuple(parts)


def _compare(left: tuple[int, ...], right: tuple[int, ...]) -> int:
    width = max(len(left), len(right))
    a, b = left + (0,) * (width - len(left)), right + (0,) * (width - len(right))
    return (a > b) - (a < b)


def version_in_range(version: str, specifier: str) -> bool:
    """Whether `version` satisfies a comma-separated specifier of >=, >, <=, <, ==, != clauses."""
    have = _release(version)
    checks = {">=": lambda c: c >= 0, ">": lambda c: c > 0, "<=": lambda c: c <= 0, "<": lambda c: c < 0,
              "==": lambda c: c == 0, "!=": lambda c: c != 0}
    for clause in filter(None, (c.strip() for c in specifier.split(","))):
        match = re.match(r"(>=|<=|==|!=|>|<)\s*([\w.*]+)$", clause)
        if not match:
            continue  # a clause this small parser does not know (~=, ===) does not decide the answer
        operator, bound = match.groups()
        if not checks[operator](_compare(have, _release(bound.replace(".*", "")))):
            return False
    return True


def _declared_ranges() -> tuple[dict[str, str], str]:
    """Distribution name -> specifier from infer's own metadata (pyproject's dependencies), and Requires-Python."""
    try:
        requirements = importlib.metadata.requires(DISTRIBUTION) or []
        requires_python = importlib.metadata.metadata(DISTRIBUTION)["Requires-Python"] or ""
    except importlib.metadata.PackageNotFoundError:
        return {}, ""
    ranges: dict[str, str] = {}
    for line in requirements:
        requirement, _, marker = line.partition(";")
        if "extra ==" in marker:
            continue
        match = re.match(r"\s*([A-Za-z0-9._-]+)\s*(.*)$", requirement)
        if match:
            # Lower bound first, as people write ranges: ">=2.16,<2.22".
            clauses = sorted((c.strip() for c in match.group(2).split(",") if c.strip()), key=lambda c: c[0] != ">")
            specifier = ",".join(clauses)
            ranges.setdefault(match.group(1).lower(), specifier)
    return ranges, requires_python


def _installed_version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return ""


def check_packages() -> tuple[tuple[PackageCheck, ...], str]:
    ranges, requires_python = _declared_ranges()
    checks = []
    for name, distributions in _RANGE_PACKAGES:
        found = next(((d, v) for d in distributions if (v := _installed_version(d))), ("", ""))
        declared = next((ranges[d] for d in (found[0], *distributions) if d in ranges), "")
        checks.append(PackageCheck(name=name, distribution=found[0], version=found[1], tested_range=declared))
    return tuple(checks), requires_python


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


def _find_set_env(home: Path | None) -> str:
    roots = [home] if home is not None else []
    roots.append(_DEFAULT_TOOLKIT)
    for root in roots:
        for relative in _SET_ENV_CANDIDATES:
            candidate = root / relative
            if candidate.is_file():
                return str(candidate.resolve())
    return ""


def _devlib_entry(env: Mapping[str, str]) -> str:
    """The LD_LIBRARY_PATH entry ATC needs on a machine without an NPU driver (``<arch>-linux/devlib``)."""
    for entry in env.get("LD_LIBRARY_PATH", "").split(os.pathsep):
        if entry.rstrip("/").endswith("devlib"):
            return entry
    return ""


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
        set_env=_find_set_env(home), devlib=_devlib_entry(env), temp_dir=str(temp), temp_writable=writable,
        temp_error=temp_error, stages=plan_stages(packages, tools),
    )
