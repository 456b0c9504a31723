"""What `infer doctor` found (`DoctorReport`): each package against its tested range, each Ascend tool, and which
stages run for real."""

from __future__ import annotations

from dataclasses import dataclass

from infer._version import __version__
from infer.doctor._versions import version_in_range


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
class OpTablesCheck:
    """The operator tables convert's pre-check and precision plan read (docs/op-tables.md)."""

    date: str  # the snapshot's day; "" when the tables could not be read
    source: str  # repository@commit
    families: tuple[tuple[str, tuple[str, ...]], ...]  # (family, the --soc-version names it covers)
    uncovered: tuple[str, ...]  # chips ATC knows that no table covers (newer than the snapshot)
    assumed: str  # the chip the stand-in plans for without --soc-version
    error: str = ""

    def to_json(self) -> dict[str, object]:
        return {"date": self.date, "source": self.source, "families": {f: list(c) for f, c in self.families},
                "uncovered": list(self.uncovered), "assumed": self.assumed, "error": self.error}


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
    op_tables: OpTablesCheck | None = None
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
            "schema": "infer.doctor", "version": 1,
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
            "op_tables": self.op_tables.to_json() if self.op_tables is not None else None,
        }
