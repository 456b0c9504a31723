"""`infer run --host`: msame or ais_bench run on the host, the run's layout and checks here as for a local run.

A tool runner with this place (`ToolsOnHost`, the runner's `place`) builds its argv as always, with the host's
paths: the om, linked from the host's store into ``models/om-<sha256>/<its name>`` (its name kept: a dump names the
model by it); each input folder's bins, linked into ``data/<key>/<i>/`` (the key is the digest of what the folder
holds, so the same bins make the same folder, made once); the tool's output folder ``runs/<id>/out``. Only files
whose digest the store lacks are sent (a bin's is dataset.json's, the om's model.json's). The tool runs with a
terminal (stopped with infer, or when the connection drops), its output judged here as for a local run, and its
output folder (and, with --dump, the dump) comes back into the local work folder, each file under a temporary name
until whole; only then does the run move outputs into its layout, so a cut connection leaves nothing half-written
there. The run's folder on the host is removed once fetched.

Before anything is sent: the tool must be on the host, the om's chip one of the host's NPUs (npu-smi), and the
device asked one npu-smi lists.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path, PurePath, PurePosixPath
from typing import Protocol

from binio.digest import BIN_DIGEST
from binio.manifest import DatasetManifest
from binio.process import ToolResult
from binio.reading import parse_json, read_text_file
from infer.contract import ModelContract
from infer.remote._host import Host, open_host
from infer.remote._workspace import COMPLETE, Blob, Placement, Workspace, blob_of, folder_key
from infer.remote.options import RemoteError, RemoteOptions
from infer.remote.record import RemoteRecord


class ToolRunnerLike(Protocol):
    """What this place reads of the tool runner it serves (`infer.run`'s ToolRunner)."""

    tool: str
    om: Path
    acl_json: Path | None
    device_id: int | None
    timeout: float

    def argv(self, input_dirs: Sequence[PurePath], out: PurePath, *, planned: bool = False,
             om: PurePath | None = None, acl_json: PurePath | None = None) -> list[str]: ...


_MADE = ".infer-made"  # an empty file that makes a run's output folder on the host


def _digests(manifest: DatasetManifest | None) -> dict[Path, tuple[str, str]]:
    """Each bin of the dataset by its path, with the digest dataset.json records for it (always `BIN_DIGEST`)."""
    if manifest is None:
        return {}
    return {manifest.root / item.folder / entry.name: (BIN_DIGEST, entry.digest)
            for item in manifest.inputs for entry in item.files}


class ToolsOnHost:
    """One tool runner's host: connected on the runner's activation, left on its deactivation."""

    def __init__(self, options: RemoteOptions, contract: ModelContract, manifest: DatasetManifest | None) -> None:
        self.options = options
        self.contract = contract
        self.name = ", ".join(options.host)
        self._known = _digests(manifest)
        self._stack: contextlib.ExitStack | None = None
        self._hosts: list[Host] = []
        self._record: RemoteRecord | None = None

    @property
    def host(self) -> Host:
        """The one host a tool start runs on (a run over several hosts runs one shard on each)."""
        assert len(self._hosts) == 1, "the runner is not active, or has several hosts"
        return self._hosts[0]

    def activate(self, runner: ToolRunnerLike) -> None:
        """Connects to each host and checks it (a sharded run's driver checks every host before a shard starts)."""
        stack = contextlib.ExitStack()
        try:
            for address in self.options.addresses:
                host = stack.enter_context(open_host(self.options, address))
                self._check(runner, host)
                self._hosts.append(host)
        except BaseException:
            stack.close()
            self._hosts = []
            raise
        self._stack = stack

    def deactivate(self) -> None:
        if self._stack is not None:
            self._stack.close()
        self._stack, self._hosts = None, []

    def _check(self, runner: ToolRunnerLike, host: Host) -> None:
        tool = runner.tool
        name = host.name
        tools = host.tools()
        if tool == "msame" and not tools.paths.get("msame"):
            raise RemoteError(f"{name}: msame: not found on the host's PATH ({host.env_said()})",
                              hint="msame is built from Ascend's tools repository (tools/msame); put it on PATH "
                                   "there, or run with --backend ais_bench")
        if tool == "ais_bench" and not tools.ais_bench:
            python = tools.paths.get("python3") or "no python3"
            raise RemoteError(f"{name}: ais_bench: not importable by the host's python3 ({python}; "
                              f"{host.env_said()})",
                              hint="pip install it there (the ais_bench wheel of Ascend's tools repository), or run "
                                   "with --backend msame")
        npu_smi = tools.npu_smi
        converted = self.contract.converted
        if npu_smi is None or not npu_smi.chips:
            return
        if converted is not None and converted.soc_version and npu_smi.soc_versions and \
                converted.soc_version not in npu_smi.soc_versions:
            raise RemoteError(f"{name}: the om is built for {converted.soc_version}, the host's NPUs are "
                              f"{npu_smi.describe()} (npu-smi info): it would not load there",
                              hint="convert for the host's chip: infer convert --target om --host HOST (which takes "
                                   "the chip npu-smi reports)")
        device = runner.device_id
        devices = [chip.device for chip in npu_smi.chips]
        if device is not None and device not in devices:
            raise RemoteError(f"{name}: --device {device}: the host's NPUs are {npu_smi.describe()} (npu-smi "
                              "info)", hint=f"one of {', '.join(str(d) for d in devices)}")

    def _blob(self, path: Path) -> Blob:
        known = self._known.get(path)
        return blob_of(path, *known) if known is not None else blob_of(path)

    def _om_blob(self, om: Path) -> Blob:
        converted = self.contract.converted
        if converted is not None and converted.sha256 and self.contract.converted_path is not None and \
                om.resolve() == self.contract.converted_path.resolve():
            return blob_of(om, "sha256", converted.sha256)
        return blob_of(om, "sha256")

    def execute(self, runner: ToolRunnerLike, input_dirs: Sequence[Path], work: Path) -> ToolResult:
        host = self.host
        workspace = Workspace(host)
        om = self._om_blob(runner.om)
        om_there = f"models/om-{om.digest[:16]}/{runner.om.name}"
        inputs = [(self._blob(path), f"{index}/{path.name}")
                  for index, folder in enumerate(input_dirs)
                  for path in sorted(Path(folder).iterdir()) if path.is_file()]
        data = f"data/{folder_key(inputs)}"
        run = f"runs/{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(4)}"
        with tempfile.TemporaryDirectory(prefix="infer-acl-") as scratch:
            acl = self._acl_json(runner, Path(scratch), host.path(run, "dump"))
            workspace.stage([
                Placement(((om, om_there),), complete=f"models/om-{om.digest[:16]}/{COMPLETE}-{runner.om.name}"),
                Placement(tuple((blob, f"{data}/{relative}") for blob, relative in inputs),
                          complete=f"{data}/{COMPLETE}"),
                # a dump start runs in the dump folder: the output folder is made beside it
                Placement(((acl, f"{run}/dump/acl.json"),), complete=f"{run}/out/{_MADE}") if acl is not None
                else Placement(())])
        dirs = [PurePosixPath(host.path(data, str(index))) for index in range(len(input_dirs))]
        argv = runner.argv(dirs, PurePosixPath(host.path(run, "out")), planned=True,
                           om=PurePosixPath(host.path(om_there)),
                           acl_json=PurePosixPath(host.path(run, "dump", "acl.json")) if acl is not None else None)
        # msame reads ./acl.json wherever it runs (infer.run._dump): a dump start runs in the dump folder; any other
        # in the output folder, made first (as a local run makes its work folder)
        cwd = host.path(run, "dump") if acl is not None and runner.tool == "msame" else host.path(run, "out")
        ran = host.run(argv, timeout=runner.timeout, cwd=cwd, make_cwd=True, tty=True, what=f"running {runner.tool}")
        try:
            workspace.fetch(f"{run}/out", work, exclude=(_MADE,))
            if acl is not None and runner.acl_json is not None:
                workspace.fetch(f"{run}/dump", runner.acl_json.parent, exclude=("acl.json",))
        except RemoteError:
            if ran.code == 0:
                raise
        workspace.remove(run)
        tools = host.tools()
        self._record = RemoteRecord(
            host=self.name, workdir=host.workdir, folder=host.path(run), env_script=host.env_script,
            tool=tools.paths.get(runner.tool, "") or (f"{tools.paths.get('python3', '')} -m ais_bench"
                                                      if runner.tool == "ais_bench" else ""),
            transfer=host.transfer.name, versions=tools.versions(),
            chips=tools.npu_smi.names if tools.npu_smi is not None else (), traffic=workspace.traffic)
        return ran.tool_result()

    def _acl_json(self, runner: ToolRunnerLike, scratch: Path, dump_there: str) -> Blob | None:
        """The run's acl.json (--dump) as the host's tool reads it: its dump_path the host's dump folder."""
        acl_json = runner.acl_json
        if acl_json is None:
            return None
        document = parse_json(read_text_file(Path(acl_json), what="the run's acl.json"), named=str(acl_json),
                              what="the run's acl.json")
        document["dump"]["dump_path"] = dump_there
        written = scratch / "acl.json"
        written.write_text(json.dumps(document), encoding="utf-8")
        return blob_of(written)

    def record(self) -> RemoteRecord | None:
        return self._record
