"""The transport: the system's OpenSSH client, one multiplexed connection per host for the length of a stage.

The first command opens a master connection (ControlMaster) whose socket lies in a private temporary folder; every
command, upload and download of the stage goes through it, so a stage authenticates once however many commands
it runs. ``BatchMode=yes``: ssh never prompts, so a host that wants a password is an error that says how to set up
a key, never a hang. Host keys are checked as ssh checks them (the user's known_hosts, their
StrictHostKeyChecking): infer never adds or accepts a key, and a refusal carries ssh's own reason.

Every process goes through `binio.process.run_tool` (argv list, timeout, the process group stopped on Ctrl-C).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from binio.process import ToolError, ToolResult, run_tool
from infer.remote._shell import ENV_MISSING, NO_DIR, NO_TOOL, Ended, ended, remote_command
from infer.remote.options import HostAddress, RemoteError, RemoteOptions

log = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 15  # ssh's ConnectTimeout unless the user sets one: an unreachable host fails in seconds
PERSIST_S = 600  # a master nobody uses ends after this long, even if infer was killed without closing it
COMMAND_TIMEOUT_S = 300.0  # a probe, a listing, a link step: seconds; the tools have their own --timeout
NO_SPACE = "No space left on device"


@dataclass(frozen=True)
class RemoteResult:
    """A command that ran on the host to its end."""

    argv: tuple[str, ...]  # as it ran there
    code: int
    output: str
    seconds: float

    def tool_result(self) -> ToolResult:
        """As the local judges of atc, msame and ais_bench read a run."""
        return ToolResult(argv=self.argv, returncode=self.code, output=self.output, seconds=self.seconds)

    @property
    def lines(self) -> list[str]:
        return self.output.splitlines()


def _reason(output: str) -> str:
    """ssh's own reason: its last meaningful line (the warning banner's lines are context, not the reason)."""
    lines = [line.strip() for line in output.replace("\r\n", "\n").splitlines() if line.strip()]
    meaningful = [line for line in lines if not set(line) <= set("@ ")]
    return meaningful[-1] if meaningful else "ssh printed nothing"


def connection_error(host: str, output: str, *, when: str = "") -> RemoteError:
    """What an ssh that ended without running its command (exit 255, or a transfer tool's connection error) means,
    in one line naming the host and what to do."""
    text = output.replace("\r\n", "\n")
    reason = _reason(text)
    doing = f" while {when}" if when else ""
    if "REMOTE HOST IDENTIFICATION HAS CHANGED" in text or "Host key verification failed" in text or (
            "host key" in text.lower() and ("is known" in text or "not known" in text or "mismatch" in text)):
        first = next((line.strip() for line in text.splitlines()
                      if "IDENTIFICATION HAS CHANGED" in line or "host key is known" in line
                      or ("No " in line and "host key" in line)), "")
        said = f"{first.strip('@ ')}: {reason}" if first and first not in reason else reason
        return RemoteError(f"{host}: ssh refused the host's key{doing}: {said}",
                           hint="infer never accepts a host key itself: check the key's fingerprint with the host's "
                                "administrator, then connect once by hand (ssh HOST), or remove a stale entry with "
                                "ssh-keygen -R HOST")
    if "Permission denied" in text or "Too many authentication failures" in text:
        return RemoteError(f"{host}: no key of yours is accepted{doing}: {reason} (infer's ssh runs with "
                           "BatchMode=yes and never asks for a password)",
                           hint="install a key once: ssh-keygen (if you have none), then ssh-copy-id HOST; an "
                                "IdentityFile goes in ~/.ssh/config or --ssh-option IdentityFile=...")
    if re.search(r"Could not resolve hostname|Name or service not known|nodename nor servname", text):
        return RemoteError(f"{host}: unknown host{doing}: {reason}",
                           hint="check the name, or the alias's Host entry in ~/.ssh/config")
    if re.search(r"Connection refused|Connection timed out|No route to host|Network is unreachable|"
                 r"Operation timed out|timed out during banner exchange", text):
        return RemoteError(f"{host}: unreachable{doing}: {reason}",
                           hint="is the host up and its sshd listening on that port? ssh -v HOST shows where it stops")
    if NO_SPACE in text:
        return disk_full(host, reason)
    return RemoteError(f"{host}: the connection dropped{doing}: {reason}",
                       hint="run the same command again: what reached the host is kept there and not sent again "
                            "(infer run --resume goes on with the batches that did not finish)")


def disk_full(host: str, reason: str, where: str = "") -> RemoteError:
    return RemoteError(f"{host}: the host's disk is full{f' under {where}' if where else ''}: {reason}",
                       hint="free space there (infer doctor --host shows it; the working folder's store/ may be "
                            "emptied), or give --remote-workdir on a larger disk")


class Connection:
    """One host, reached through one master connection while the stage lasts."""

    def __init__(self, options: RemoteOptions, address: HostAddress) -> None:
        self.options = options
        self.address = address
        self.name = address.text
        self._folder: Path | None = None

    @property
    def control(self) -> Path:
        assert self._folder is not None, "the connection is not open"
        return self._folder / "control"

    def _options(self, *, master: bool) -> list[str]:
        """ssh's -o options: infer's first (ssh takes the first value it is given for each), then the user's."""
        own = ["-o", "BatchMode=yes", "-o", f"ControlPath={self.control}",
               "-o", "ControlMaster=yes" if master else "ControlMaster=no"]
        if not master:  # no "Shared connection to HOST closed." after every command: errors only
            own += ["-o", "LogLevel=ERROR"]
        if master:
            own += ["-o", f"ControlPersist={PERSIST_S}"]
        if not any(o.lower().startswith("connecttimeout=") for o in self.options.ssh_options):
            own += ["-o", f"ConnectTimeout={CONNECT_TIMEOUT_S}"]
        return [*own, *(part for option in self.options.ssh_options for part in ("-o", option))]

    def ssh_command(self) -> list[str]:
        """ssh through the master, less its destination: what rsync and sftp are given to reach the host."""
        return ["ssh", *self._options(master=False)]

    def open(self) -> None:
        if self._folder is not None:
            return
        if shutil.which("ssh") is None:
            raise RemoteError(f"{self.name}: no ssh client on this machine (ssh is not on PATH)",
                              hint="install OpenSSH's client (openssh-client)")
        # A folder only this user can enter: the socket in it is the connection, authenticated.
        self._folder = Path(tempfile.mkdtemp(prefix="infer-ssh-"))
        argv = ["ssh", *self._options(master=True), "-f", "-N", *self.address.ssh_args()]
        try:
            result = run_tool(argv, timeout=CONNECT_TIMEOUT_S * 4 + 30)
        except ToolError as exc:
            self._remove_folder()
            raise RemoteError(f"{self.name}: ssh did not connect: {exc.message.splitlines()[0]}",
                              hint="ssh -v HOST shows where it stops") from None
        except BaseException:
            self._remove_folder()
            raise
        if result.returncode != 0:
            self._remove_folder()
            raise connection_error(self.name, result.output, when="connecting")
        log.info("%s: connected (control socket %s)", self.name, self.control)

    def close(self) -> None:
        if self._folder is None:
            return
        with contextlib.suppress(ToolError):
            run_tool(["ssh", "-o", f"ControlPath={self.control}", "-O", "exit", self.address.ssh_args()[-1]],
                     timeout=30)
        self._remove_folder()

    def _remove_folder(self) -> None:
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None

    def run(self, argv: Sequence[str], *, timeout: float = COMMAND_TIMEOUT_S, env_script: str = "", cwd: str = "",
            make_cwd: bool = False, tty: bool = False, what: str = "") -> RemoteResult:
        """Runs `argv` on the host to its end; its exit code is the caller's to judge. Raises `RemoteError` when the
        connection cut it off, the env script or the folder is missing, or the tool is not on the host's PATH.

        `tty` (the tools: atc, msame, ais_bench) gives the command a terminal, so that when infer stops it (a
        timeout, Ctrl-C) or the connection drops, the host sends it SIGHUP as a closed terminal does: a tool left
        running would hold the NPU."""
        command = remote_command(argv, env_script=env_script, cwd=cwd, make_cwd=make_cwd)
        local = ["ssh", *self._options(master=False), *(["-tt"] if tty else []), *self.address.ssh_args(),
                 command.text]
        start = time.monotonic()
        try:
            result = run_tool(local, timeout=timeout)
        except ToolError as exc:
            if "no result after" not in exc.message:  # ssh itself would not start
                raise RemoteError(f"{self.name}: {exc.message}", hint=exc.hint) from None
            tool = Path(argv[0]).name if argv else "the command"
            ended_too = " (its terminal closed with it: the host ends it)" if tty else ""
            raise RemoteError(f"{self.name}: {tool}: no result after {timeout:g} s; stopped it{ended_too}",
                              hint="raise --timeout if the model is large, or run it there by hand to see where it "
                                   "hangs") from None
        end = ended(result.output, command.nonce, result.returncode)
        return self._judged(end, command.argv, env_script, cwd, time.monotonic() - start, what)

    def _judged(self, end: Ended, argv: tuple[str, ...], env_script: str, cwd: str, seconds: float,
                what: str) -> RemoteResult:
        tool = Path(argv[0]).name if argv else "the command"
        if end.status == "":
            raise connection_error(self.name, end.output, when=what or f"running {tool}")
        if end.status == ENV_MISSING:
            raise RemoteError(f"{self.name}: {env_script}: no such file on the host (the env script to source "
                              f"before {tool})",
                              hint="give --env-script the path of CANN's set_env.sh there (infer doctor --host "
                                   "lists the ones it finds)")
        if end.status == NO_DIR:
            raise RemoteError(f"{self.name}: {cwd}: cannot enter this folder on the host")
        if end.status == NO_TOOL:
            sourced = f" after sourcing {env_script}" if env_script else " (no CANN env script was found to source)"
            raise RemoteError(f"{self.name}: {argv[0]}: not found on the host's PATH{sourced}",
                              hint="install it there (msame is built from Ascend's tools repository, ais_bench is "
                                   "pip-installed, atc comes with the CANN toolkit), or name the env script that "
                                   "puts it on PATH with --env-script; infer doctor --host shows what the host has")
        if end.code != 0 and NO_SPACE in end.output:
            line = next(line.strip() for line in end.output.splitlines() if NO_SPACE in line)
            raise disk_full(self.name, line)
        return RemoteResult(argv=argv, code=end.code, output=end.output, seconds=seconds)


class _Shared:
    """Open connections by host and options, counted: a sharded run's shards (threads) share their host's one
    connection with the driver, which holds it for the run."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: dict[tuple[str, RemoteOptions], tuple[Connection, int]] = {}

    @contextlib.contextmanager
    def connection(self, options: RemoteOptions, address: HostAddress) -> Iterator[Connection]:
        key = (address.text, replace(options, host=()))  # a shard's options name its one host of the run's
        with self._lock:
            found = self._open.get(key)
            if found is None:
                connection = Connection(options, address)
                connection.open()
                self._open[key] = (connection, 1)
            else:
                connection, users = found
                self._open[key] = (connection, users + 1)
        try:
            yield connection
        finally:
            with self._lock:
                connection, users = self._open[key]
                if users > 1:
                    self._open[key] = (connection, users - 1)
                else:
                    del self._open[key]
                    connection.close()


SHARED = _Shared()


@contextlib.contextmanager
def held_connections(options: RemoteOptions | None) -> Iterator[None]:
    """Every host of `options` connected while the body runs (a sharded run: its shards come and go, the
    connections stay); nothing for a run here."""
    with contextlib.ExitStack() as stack:
        if options is not None:
            for address in options.addresses:
                stack.enter_context(SHARED.connection(options, address))
        yield


def forget_connections_after_fork() -> None:
    """A forked child must not close its parent's connections (os.register_at_fork)."""
    SHARED._open.clear()


os.register_at_fork(after_in_child=forget_connections_after_fork)
