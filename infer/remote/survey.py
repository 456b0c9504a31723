"""What an Ascend host offers (`survey_host`, for `infer doctor --host`): the connection, the working folder and its
free space, the CANN env script, atc and CANN's version, msame, ais_bench, npu-smi's chips, and rsync or sftp. Two
commands on one connection; nothing is sent or run but the probes."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from infer.remote._host import ENV_SCRIPTS, cann_too_old, open_host
from infer.remote.npu_smi import NpuSmiInfo
from infer.remote.options import RemoteOptions


@dataclass(frozen=True)
class HostSurvey:
    host: str
    seconds: float  # connecting and asking
    workdir: str
    free_kb: int | None
    env_script: str  # the one the stages source ("" none)
    env_given: bool  # named by --env-script rather than found
    env_scripts: tuple[str, ...]  # every candidate found there
    transfer: str  # rsync | sftp
    has_rsync: bool  # on the host (rsync also needs it here)
    atc: str  # paths there, "" when missing
    msame: str
    python3: str
    ais_bench: bool
    ais_bench_version: str
    cann_version: str
    cann_version_file: str
    npu_smi_path: str
    npu_smi: NpuSmiInfo | None
    npu_smi_error: str

    @property
    def cann_supported(self) -> bool:
        return not (self.cann_version and cann_too_old(self.cann_version))

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": "infer.doctor-host", "version": 1, "host": self.host, "seconds": round(self.seconds, 3),
            "workdir": {"path": self.workdir, "free_kb": self.free_kb},
            "env_script": {"path": self.env_script, "given": self.env_given, "found": list(self.env_scripts),
                           "looked_at": list(ENV_SCRIPTS)},
            "transfer": self.transfer, "rsync_on_host": self.has_rsync,
            "tools": {"atc": {"path": self.atc, "cann_version": self.cann_version,
                              "version_file": self.cann_version_file, "supported": self.cann_supported},
                      "msame": {"path": self.msame},
                      "ais_bench": {"python3": self.python3, "found": self.ais_bench,
                                    "version": self.ais_bench_version},
                      "npu_smi": {"path": self.npu_smi_path, "error": self.npu_smi_error}},
            "npu": self.npu_smi.to_json() if self.npu_smi is not None else None,
        }


def survey_host(options: RemoteOptions) -> HostSurvey:
    """Connects to the host of `options` and asks it what it has; raises `RemoteError` when it cannot be reached."""
    start = time.monotonic()
    with open_host(options) as host:
        tools = host.tools()
        return HostSurvey(
            host=host.name, seconds=time.monotonic() - start, workdir=host.workdir, free_kb=host.free_kb,
            env_script=host.env_script, env_given=bool(options.env_script), env_scripts=host.env_scripts_found,
            transfer=host.transfer.name, has_rsync=host.has_rsync, atc=tools.paths.get("atc", ""),
            msame=tools.paths.get("msame", ""), python3=tools.paths.get("python3", ""), ais_bench=tools.ais_bench,
            ais_bench_version=tools.ais_bench_version, cann_version=tools.cann_version,
            cann_version_file=tools.cann_version_file, npu_smi_path=tools.paths.get("npu-smi", ""),
            npu_smi=tools.npu_smi, npu_smi_error=tools.npu_smi_error)
