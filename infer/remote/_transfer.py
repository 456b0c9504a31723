"""Files to and from the host, through the stage's one connection: rsync where the host has it, else sftp.

rsync first: it writes each file under a temporary name and renames it once whole, keeps what an interrupted
transfer had sent (``--partial-dir``) so that the next attempt sends only the rest of a large file, checks every
file it moved with its own checksum, and sends a tree of thousands of bins in one stream. sftp is on every host with
sshd (its subsystem), so it is the fallback: infer writes each file under a temporary name and renames it itself.
scp is not used: it renames nothing, so a cut transfer leaves a file that looks whole. Which of the two carried
the files is said in run.json and model.json (``remote.transfer``).

Every remote path given here is built by the caller inside the host's working folder; rsync gets it with
``--protect-args`` (no remote shell parses it) and sftp's batch file quotes it, so a file name with spaces, quotes,
``$()`` or ``;`` is a name, nothing else.
"""

from __future__ import annotations

import os
import shlex
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from binio.process import ToolError, ToolResult, run_tool
from infer.remote._ssh import NO_SPACE, Connection, connection_error, disk_full
from infer.remote.options import RemoteError

TRANSFER_TIMEOUT_S = 24 * 3600.0  # a transfer ends when its connection does (ServerAlive, TCP); no time limit of ours
PARTIAL = ".infer-partial"  # rsync's folder for what an interrupted transfer had sent, beside the file it was for
PART_SUFFIX = ".infer-part"  # sftp: a file being written, renamed once whole


@dataclass(frozen=True)
class Moved:
    """What one transfer moved."""

    files: int
    bytes: int
    seconds: float


class Transfer(Protocol):
    name: str

    def send(self, files: Sequence[tuple[Path, str]], remote_root: str) -> Moved:
        """Each (local file, path relative to `remote_root`) written there, whole or not at all."""
        ...

    def fetch(self, remote_root: str, local_root: Path, *, exclude: Sequence[str] = ()) -> Moved:
        """Every regular file under `remote_root` into `local_root` (its tree kept), each whole or not at all;
        `exclude` names files (relative to `remote_root`) left there."""
        ...

    def fetch_file(self, remote_path: str, local_path: Path) -> Moved:
        """One file, written beside `local_path` under a temporary name and renamed onto it once whole."""
        ...


def _destination(connection: Connection) -> str:
    """``user@host`` as rsync and sftp name the host (an IPv6 address in brackets)."""
    address = connection.address
    host = f"[{address.host}]" if ":" in address.host else address.host
    return f"{address.user}@{host}" if address.user else host


def _failed(connection: Connection, tool: str, result: ToolResult, doing: str) -> RemoteError:
    if NO_SPACE in result.output:
        line = next(line.strip() for line in result.output.splitlines() if NO_SPACE in line)
        return disk_full(connection.name, line)
    return connection_error(connection.name, result.output, when=f"{doing} files ({tool}, exit {result.returncode})")


def _run(connection: Connection, argv: list[str], tool: str, doing: str) -> ToolResult:
    try:
        result = run_tool(argv, timeout=TRANSFER_TIMEOUT_S)
    except ToolError as exc:
        raise RemoteError(f"{connection.name}: {exc.message}", hint=exc.hint) from None
    if result.returncode != 0:
        raise _failed(connection, tool, result, doing)
    return result


def _size(paths: Sequence[Path]) -> int:
    return sum(path.stat().st_size for path in paths)


class Rsync:
    name = "rsync"

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        ssh = connection.ssh_command()
        if connection.address.port is not None:
            ssh += ["-p", str(connection.address.port)]
        # rsync splits -e itself, honouring quotes; the option values hold no quote (RemoteOptions refuses them)
        self.shell = " ".join(shlex.quote(part) for part in ssh)

    def _argv(self, *rest: str) -> list[str]:
        return ["rsync", "--recursive", "--protect-args", f"--partial-dir={PARTIAL}", "-e", self.shell, *rest]

    def send(self, files: Sequence[tuple[Path, str]], remote_root: str) -> Moved:
        if not files:
            return Moved(0, 0, 0.0)
        start = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="infer-send-") as staging:
            # The tree as it is to lie on the host, made of links to the local files (-L sends what they point to).
            for local, relative in files:
                link = Path(staging) / relative
                link.parent.mkdir(parents=True, exist_ok=True)
                link.symlink_to(Path(local).resolve())
            _run(self.connection, self._argv("--copy-links", f"{staging}/",
                                             f"{_destination(self.connection)}:{remote_root}/"), "rsync", "sending")
        return Moved(len(files), _size([local for local, _ in files]), time.monotonic() - start)

    def fetch(self, remote_root: str, local_root: Path, *, exclude: Sequence[str] = ()) -> Moved:
        start = time.monotonic()
        local_root.mkdir(parents=True, exist_ok=True)
        before = _tree(local_root)
        excluded = [part for name in exclude for part in ("--exclude", f"/{name}")]
        _run(self.connection, self._argv(*excluded, f"{_destination(self.connection)}:{remote_root}/",
                                         f"{local_root}/"), "rsync", "fetching")
        after = _tree(local_root)
        new = [path for path, stamp in after.items() if before.get(path) != stamp]
        return Moved(len(new), _size(new), time.monotonic() - start)

    def fetch_file(self, remote_path: str, local_path: Path) -> Moved:
        start = time.monotonic()
        part = _part(local_path)
        try:
            _run(self.connection, ["rsync", "--protect-args", "-e", self.shell,
                                   f"{_destination(self.connection)}:{remote_path}", str(part)], "rsync", "fetching")
            os.replace(part, local_path)
        finally:
            part.unlink(missing_ok=True)
        return Moved(1, local_path.stat().st_size, time.monotonic() - start)


def _part(local_path: Path) -> Path:
    return local_path.with_name(f".{local_path.name}{PART_SUFFIX}")


def _tree(root: Path) -> dict[Path, tuple[int, int]]:
    """Every file under `root` (rsync's partial folders aside), with its size and modification time."""
    found = {}
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != PARTIAL]
        for name in names:
            path = Path(folder) / name
            info = path.stat()
            found[path] = (info.st_size, info.st_mtime_ns)
    return found


def _quoted(path: str) -> str:
    """A path as sftp's batch commands read it: double quotes, backslash-escaped (and so never a glob)."""
    if "\n" in path or "\r" in path:
        raise RemoteError(f"{path!r}: a file name with a line break cannot be sent by sftp")
    return '"' + path.replace("\\", "\\\\").replace('"', '\\"') + '"'


class Sftp:
    name = "sftp"

    def __init__(self, connection: Connection) -> None:
        self.connection = connection

    def _batch(self, commands: Sequence[str], doing: str) -> None:
        with tempfile.NamedTemporaryFile("w", prefix="infer-sftp-", suffix=".batch", delete=False) as batch:
            batch.write("\n".join(commands) + "\n")
        port = ["-o", f"Port={self.connection.address.port}"] if self.connection.address.port is not None else []
        try:
            argv = ["sftp", "-q", "-b", batch.name, *self.connection.ssh_command()[1:], *port,
                    _destination(self.connection)]
            result = run_tool(argv, timeout=TRANSFER_TIMEOUT_S)
        except ToolError as exc:
            raise RemoteError(f"{self.connection.name}: {exc.message}", hint=exc.hint) from None
        finally:
            os.unlink(batch.name)
        if result.returncode != 0:
            if "Couldn't write" in result.output or "Failure" in result.output:
                line = next(line.strip() for line in result.output.splitlines()
                            if "Couldn't write" in line or "Failure" in line)
                raise RemoteError(f"{self.connection.name}: sftp could not write there ({line}): a full disk, or "
                                  "no permission", hint="infer doctor --host shows the free space of the working "
                                                        "folder")
            raise _failed(self.connection, "sftp", result, doing)

    def send(self, files: Sequence[tuple[Path, str]], remote_root: str) -> Moved:
        if not files:
            return Moved(0, 0, 0.0)
        start = time.monotonic()
        folders = sorted({str(Path(relative).parent) for _, relative in files} - {"."}, key=len)
        made = {f"{remote_root}/{'/'.join(Path(folder).parts[:depth])}" for folder in folders
                for depth in range(1, len(Path(folder).parts) + 1)}
        commands = [f"-mkdir {_quoted(folder)}" for folder in [remote_root, *sorted(made, key=len)]]
        for local, relative in files:
            target = f"{remote_root}/{relative}"
            commands += [f"put {_quoted(str(Path(local).resolve()))} {_quoted(target + PART_SUFFIX)}",
                         f"rename {_quoted(target + PART_SUFFIX)} {_quoted(target)}"]
        self._batch(commands, "sending")
        return Moved(len(files), _size([local for local, _ in files]), time.monotonic() - start)

    def fetch(self, remote_root: str, local_root: Path, *, exclude: Sequence[str] = ()) -> Moved:
        start = time.monotonic()
        listing = self.connection.run(["find", remote_root, "-type", "f", "-printf", "%P\\0"], what="listing")
        names = [name for name in listing.output.split("\0") if name.strip("\n") and name not in exclude]
        names = [name.strip("\n") for name in names]
        moves = []
        for name in names:
            target = local_root / name
            if not target.resolve().is_relative_to(local_root.resolve()):
                raise RemoteError(f"{self.connection.name}: {remote_root}/{name}: a path leaving the folder it is "
                                  "fetched into; not fetched")
            target.parent.mkdir(parents=True, exist_ok=True)
            moves.append((f"{remote_root}/{name}", target))
        self._batch([f"get {_quoted(source)} {_quoted(str(target) + PART_SUFFIX)}" for source, target in moves],
                    "fetching")
        for _, target in moves:
            os.replace(str(target) + PART_SUFFIX, target)
        return Moved(len(moves), _size([target for _, target in moves]), time.monotonic() - start)

    def fetch_file(self, remote_path: str, local_path: Path) -> Moved:
        start = time.monotonic()
        part = _part(local_path)
        try:
            self._batch([f"get {_quoted(remote_path)} {_quoted(str(part))}"], "fetching")
            os.replace(part, local_path)
        finally:
            part.unlink(missing_ok=True)
        return Moved(1, local_path.stat().st_size, time.monotonic() - start)
