"""A real OpenSSH server on 127.0.0.1 for the tests of `infer.remote`: the distribution's sshd on a free port, a
throwaway host key and client key, logging in the current user, whose "remote" home holds CANN's env script at its
non-root place (~/Ascend/ascend-toolkit/set_env.sh) putting the fake atc, msame, ais_bench and npu-smi on PATH.

Nothing listens on any address but loopback; the server, its keys and its home are the test's temporary folder's.
The client side is infer's own (the system's ssh), told the key and the known_hosts file by ``--ssh-option``.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from infer.remote.options import RemoteOptions

FAKES = Path(__file__).resolve().parents[2] / "fakes"
SSHD = shutil.which("sshd") or "/usr/sbin/sshd"
PRIVSEP = Path("/run/sshd")  # the privilege separation folder Debian's sshd checks for when started as root


def why_no_sshd() -> str:
    """Why a real sshd cannot be started here ("" when it can)."""
    if not Path(SSHD).is_file():
        return f"no OpenSSH server ({SSHD}): install openssh-server (.ci/run does)"
    for tool in ("ssh", "ssh-keygen", "sftp"):
        if shutil.which(tool) is None:
            return f"no {tool} on PATH: install openssh-client"
    if os.geteuid() == 0 and not PRIVSEP.is_dir():
        try:
            PRIVSEP.mkdir(mode=0o755, parents=True)  # what the package's service would make at boot
        except OSError as exc:
            return f"sshd runs as root and needs {PRIVSEP}, which cannot be made ({exc.strerror})"
    return ""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def keygen(path: Path) -> None:
    """A throwaway ed25519 key pair: `path` and `path`.pub."""
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "infer-tests", "-f", str(path)], check=True)


ENV_SCRIPT = """# a CANN-like set_env.sh for the tests: the fake tools on PATH, the fake toolkit's version.info
export ASCEND_TOOLKIT_HOME="$HOME/Ascend/ascend-toolkit/latest"
export PATH="{fakes}:{python}:$PATH"
export PYTHONPATH="{fakes}${{PYTHONPATH:+:$PYTHONPATH}}"
export FAKE_ATC_COMPILE=onnx
[ -f "$HOME/fake-env.sh" ] && . "$HOME/fake-env.sh"
"""


@dataclass
class SshServer:
    """One running sshd and what a client needs to reach it."""

    root: Path
    port: int
    home: Path  # the remote user's HOME (sshd's SetEnv)
    known_hosts: Path
    client_key: Path
    host_key: Path
    process: subprocess.Popen[bytes]

    @property
    def user(self) -> str:
        return pwd.getpwuid(os.getuid()).pw_name

    @property
    def host(self) -> str:
        return f"{self.user}@127.0.0.1:{self.port}"

    def options(self, **changes: object) -> RemoteOptions:
        """RemoteOptions that reach this server with its keys, nothing of ~/.ssh involved."""
        ssh = (f"UserKnownHostsFile={self.known_hosts}", "GlobalKnownHostsFile=/dev/null",
               f"IdentityFile={self.client_key}", "IdentitiesOnly=yes")
        values: dict[str, object] = {"host": (self.host,), "ssh_options": ssh}
        values.update(changes)
        return RemoteOptions(**values)  # type: ignore[arg-type]

    def fake_env(self, text: str) -> None:
        """Lines the env script sources last (FAKE_NPU_SMI=..., a PATH without msame)."""
        (self.home / "fake-env.sh").write_text(text)

    def host_tool(self, name: str, script: str | None) -> None:
        """A tool on the login's PATH of the host (~/bin), standing in for the host's own; None removes it."""
        path = self.home / "bin" / name
        if script is None:
            path.unlink(missing_ok=True)
            return
        path.write_text(script)
        path.chmod(0o755)

    def sessions(self) -> list[int]:
        """The pids of the sshd processes serving connections (the listener's children)."""
        found = subprocess.run(["pgrep", "-P", str(self.process.pid)], capture_output=True, text=True)
        return [int(pid) for pid in found.stdout.split()]

    def stop(self) -> None:
        for pid in self.sessions():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, 15)
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def start_sshd(root: Path, *, remote_path: str = "{home}/bin:/usr/local/bin:/usr/bin:/bin") -> SshServer:
    """sshd on 127.0.0.1 on a free port, serving the current user from `root`; the login's PATH is `remote_path`
    (``{home}`` the remote home: its bin/ is where a test puts a tool that stands in for the host's own)."""
    root.mkdir(parents=True, exist_ok=True)
    os.chmod(root, 0o700)
    host_key, client_key = root / "host_key", root / "client_key"
    keygen(host_key)
    keygen(client_key)
    shutil.copyfile(client_key.with_suffix(".pub"), root / "authorized_keys")
    home = root / "home"
    (home / "bin").mkdir(parents=True)
    toolkit = home / "Ascend" / "ascend-toolkit"
    (toolkit / "latest" / "compiler").mkdir(parents=True)
    (toolkit / "latest" / "compiler" / "version.info").write_text("Version=7.0.0\n")
    (toolkit / "set_env.sh").write_text(ENV_SCRIPT.format(fakes=FAKES, python=Path(sys.executable).parent))
    for attempt in range(5):
        port = free_port()
        config = root / "sshd_config"
        config.write_text("\n".join([
            "ListenAddress 127.0.0.1", f"Port {port}", f"HostKey {host_key}", f"PidFile {root / 'sshd.pid'}",
            f"AuthorizedKeysFile {root / 'authorized_keys'}", "PubkeyAuthentication yes",
            "PasswordAuthentication no", "KbdInteractiveAuthentication no", "PermitRootLogin prohibit-password",
            "UsePAM no", "StrictModes no", "MaxSessions 64", "MaxStartups 64",
            f"SetEnv HOME={home} PATH={remote_path.format(home=home)}", "Subsystem sftp internal-sftp",
            "LogLevel ERROR", ""]))
        process = subprocess.Popen([SSHD, "-D", "-e", "-f", str(config)], stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=open(root / "sshd.log", "ab"))  # noqa: SIM115
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and process.poll() is None:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                break
            time.sleep(0.05)
        if process.poll() is None:
            known = root / "known_hosts"
            known.write_text(f"[127.0.0.1]:{port} {host_key.with_suffix('.pub').read_text().split(' ')[0]} "
                             f"{host_key.with_suffix('.pub').read_text().split(' ')[1]}\n")
            return SshServer(root=root, port=port, home=home, known_hosts=known, client_key=client_key,
                             host_key=host_key, process=process)
        if attempt == 4:
            raise RuntimeError(f"sshd did not start: {(root / 'sshd.log').read_text()[-2000:]}")
    raise AssertionError("unreachable")
