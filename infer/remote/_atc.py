"""`infer convert --target om --host`: the ATC argv convert built, run on the host.

The argv is convert's own; only where it runs changes. Each file an ATC option names (`ATC_FILE_OPTIONS`: the pb,
aipp.cfg, the per-op precision files) is sent to the host's store unless its digest is there already (the pb's is
model.json's sha256), linked into the model's folder there (``models/<pb digest>/``, each file in its place in the
model folder, or under ``_files/<option>/`` for one from elsewhere) and named by its path there; ``--output`` names
that folder. A stale om there is removed first, so no earlier om can come back as this run's. ATC's output is judged
as locally (`atc_wrap.atc.run.judge_output`), every message naming the host; the om comes back under a temporary
name and is renamed into the model folder once whole, and is kept in the host's store by its sha256, so that
`infer run --host` sends nothing for it. ``--atc-arg`` values are passed as written: a file one names must be on the
host already.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from atc_wrap.atc.command import ATC_FILE_OPTIONS, ATC_OUTPUT_OPTION
from atc_wrap.atc.run import judge_output
from atc_wrap.errors import ConvertError
from binio.binfile import sha256_file
from binio.process import ToolResult
from binio.steps import OnStep
from infer.contract import ModelContract
from infer.remote._chip import host_soc_version
from infer.remote._host import Host, cann_too_old, open_host
from infer.remote._workspace import Blob, Placement, Workspace, blob_of
from infer.remote.options import RemoteError, RemoteOptions
from infer.remote.record import RemoteRecord

log = logging.getLogger(__name__)


@dataclass
class AtcOnHost:
    """ATC on one host for one model: what convert's `run_atc` is given as its executor."""

    host: Host
    contract: ModelContract
    workspace: Workspace = field(init=False)
    record: RemoteRecord | None = None

    def __post_init__(self) -> None:
        self.workspace = Workspace(self.host)

    @property
    def folder(self) -> str:
        """The model's folder in the host's working folder: named by the pb's digest."""
        return f"models/{self.contract.pb_sha256[:16] or 'model'}"

    @property
    def atc(self) -> str:
        """What the argv starts with there: atc on the host's PATH once the env script is sourced."""
        return "atc"

    def _relative(self, local: Path, flag: str) -> str:
        """Where a local file goes in the model's folder on the host."""
        folder = self.contract.folder.resolve()
        resolved = local.resolve()
        if resolved.is_relative_to(folder):
            return resolved.relative_to(folder).as_posix()
        return f"_files/{flag.lstrip('-')}/{local.name}"

    def mapped(self, argv: Sequence[str]) -> tuple[list[str], list[tuple[Blob, str]], str]:
        """(the argv as it runs on the host, the files to place there, the om's path there relative to the
        working folder)."""
        host_argv = [self.atc]
        placed: list[tuple[Blob, str]] = []
        om = ""
        for arg in argv[1:]:
            flag, sep, value = arg.partition("=")
            if sep and flag in ATC_FILE_OPTIONS and value:
                local = Path(value)
                relative = f"{self.folder}/{self._relative(local, flag)}"
                known = local.resolve() == self.contract.pb_path.resolve() and self.contract.pb_sha256
                placed.append((blob_of(local, "sha256", self.contract.pb_sha256) if known else blob_of(local),
                               relative))
                host_argv.append(f"{flag}={self.host.path(relative)}")
            elif sep and flag == ATC_OUTPUT_OPTION:
                om = f"{self.folder}/{self._relative(Path(value + '.om'), flag)}"
                host_argv.append(f"{flag}={self.host.path(om.removesuffix('.om'))}")
            else:
                host_argv.append(arg)
        return host_argv, placed, om

    def shown(self, argv: Sequence[str]) -> tuple[str, ...]:
        """The argv as it would run on the host (a dry run prints it)."""
        return tuple(self.mapped(argv)[0])

    def __call__(self, argv: Sequence[str], *, timeout: float, cwd: Path, om: Path) -> ToolResult:
        host_argv, placed, om_there = self.mapped(argv)
        self.workspace.stage([Placement(tuple(placed))])
        self.host.run(["rm", "-f", "--", self.host.path(om_there)], sourced=False, what="removing an earlier om")
        ran = self.host.run(host_argv, timeout=timeout, cwd=self.host.path(self.folder), tty=True,
                            what="running atc")
        result = ran.tool_result()
        if ran.code == 0 and self.workspace.exists(om_there):
            self.workspace.fetch_file(om_there, om)
            self.workspace.keep(om_there, blob_of(om, "sha256", sha256_file(om)))
        self.record = self._record()
        try:
            judge_output(result, om)
        except ConvertError as exc:
            raise ConvertError(f"{self.host.name}: {exc.message}", hint=exc.hint) from None
        return result

    def _record(self) -> RemoteRecord:
        tools = self.host.tools()
        return RemoteRecord(host=self.host.name, workdir=self.host.workdir, folder=self.host.path(self.folder),
                            env_script=self.host.env_script, tool=tools.paths.get("atc", ""),
                            transfer=self.host.transfer.name, versions=tools.versions(),
                            chips=tools.npu_smi.names if tools.npu_smi is not None else (),
                            traffic=self.workspace.traffic)


def check_atc(host: Host) -> None:
    """Refuses, before anything is sent, a host without atc or with a CANN older than infer follows."""
    tools = host.tools()
    if not tools.paths.get("atc"):
        raise RemoteError(f"{host.name}: atc: not found on the host's PATH ({host.env_said()})",
                          hint="atc comes with CANN's toolkit (ascend-toolkit); give --env-script the toolkit's "
                               "set_env.sh, or infer doctor --host to see what the host has")
    if tools.cann_version and cann_too_old(tools.cann_version):
        raise RemoteError(f"{host.name}: CANN {tools.cann_version} ({tools.cann_version_file}) is older than 5.0, "
                          "whose ATC options infer passes", hint="convert with a newer CANN, or run --dry-run's "
                                                                 "command by hand there")


@contextmanager
def atc_on_host(options: RemoteOptions, contract: ModelContract, soc_version: str,
                on_step: OnStep) -> Iterator[tuple[AtcOnHost, str, str]]:
    """The host of `options` ready to run convert's ATC argv for `contract` (atc there and new enough, refused
    before anything is sent otherwise), with the chip to plan for: `soc_version` if given, else the host's own from
    npu-smi, a chip the host does not have refused; and the line that says which. Held open for the block."""
    with open_host(options) as host:
        check_atc(host)
        tools = host.tools()
        soc, said = host_soc_version(host.name, tools.npu_smi, tools.npu_smi_error, soc_version)
        log.info("%s", said)
        on_step(f"ATC on {host.name} ({host.env_said()})")
        yield AtcOnHost(host, contract), soc, said
