"""One Ascend host as a stage sees it: the connection, its working folder, the CANN env script, rsync or sftp, the
tools it has and the chips npu-smi lists. Everything is asked in as few round trips as it can be (one probe when the
stage starts, one more for the tools' versions and npu-smi when a stage needs them).

The env script: the one ``--env-script`` names, else the first of CANN's usual places that exists on the host
(CANN's install layout: the toolkit's ``set_env.sh``, then the ``nnae`` and ``nnrt`` runtimes', under
/usr/local/Ascend or, for a non-root install, ~/Ascend; older CANN kept it under ``ascend-toolkit/latest/``). None
found is not an error by itself: a host whose login already sets CANN up runs the tools as they are, and a tool
then missing says so.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from infer.remote._ssh import SHARED, Connection, RemoteResult
from infer.remote._transfer import Rsync, Sftp, Transfer
from infer.remote.npu_smi import NpuSmiFormatError, NpuSmiInfo, parse_npu_smi_info
from infer.remote.options import HostAddress, RemoteError, RemoteOptions

ENV_SCRIPTS: tuple[str, ...] = (
    "/usr/local/Ascend/ascend-toolkit/set_env.sh",
    "~/Ascend/ascend-toolkit/set_env.sh",
    "/usr/local/Ascend/ascend-toolkit/latest/set_env.sh",
    "/usr/local/Ascend/ascend-toolkit/latest/bin/setenv.bash",
    "/usr/local/Ascend/nnae/set_env.sh",
    "~/Ascend/nnae/set_env.sh",
    "/usr/local/Ascend/nnrt/set_env.sh",
    "~/Ascend/nnrt/set_env.sh",
)

# $1 the working folder (~ for the home), then the env script candidates. Prints KEY=VALUE lines.
_PROBE = r"""workdir=$1; shift
case $workdir in "~") workdir=$HOME ;; "~/"*) workdir=$HOME/${workdir#"~/"} ;; esac
printf 'workdir=%s\n' "$workdir"
mkdir -p -- "$workdir" && [ -w "$workdir" ] && printf 'workdir_ok=1\n'
printf 'rsync=%s\n' "$(command -v rsync)"
for candidate in "$@"; do
  case $candidate in "~/"*) candidate=$HOME/${candidate#"~/"} ;; esac
  [ -f "$candidate" ] && printf 'env_script=%s\n' "$candidate"
done
printf 'free_kb=%s\n' "$(df -Pk -- "$workdir" 2>/dev/null | awk 'NR==2 {print $4}')"
"""

# Run after the env script: where each tool is, CANN's version, ais_bench's, and npu-smi's table last.
_TOOLS = r"""for tool in atc msame npu-smi python3; do printf 'path.%s=%s\n' "$tool" "$(command -v "$tool")"; done
printf 'toolkit_home=%s\n' "$ASCEND_TOOLKIT_HOME"
atc=$(command -v atc)
for file in ${atc:+"$(dirname -- "$(readlink -f -- "$atc")")/../version.info"} \
            ${ASCEND_TOOLKIT_HOME:+"$ASCEND_TOOLKIT_HOME/compiler/version.info"} \
            ${ASCEND_TOOLKIT_HOME:+"$ASCEND_TOOLKIT_HOME/version.info"}; do
  if [ -f "$file" ]; then
    printf 'cann_version_file=%s\n' "$file"
    sed -n 's/^[[:space:]]*[Vv]ersion[[:space:]]*=[[:space:]]*/cann_version=/p' "$file" | head -n 1
    break
  fi
done
if command -v python3 >/dev/null 2>&1; then
  python3 -c '
import importlib.util
if importlib.util.find_spec("ais_bench") is not None:
    print("ais_bench=1")
    try:
        from importlib.metadata import version
    except ImportError:
        version = None
    for name in ("ais_bench", "ais-bench", "aclruntime"):
        try:
            print("ais_bench_version=" + version(name))
            break
        except Exception:
            pass
' 2>/dev/null
fi
if command -v npu-smi >/dev/null 2>&1; then
  printf 'npu_smi_begin\n'
  npu-smi info 2>&1
fi
"""

# CANN releases before 5.0 (the 20.x and 3.x series) predate set_env.sh and the ATC options infer passes as their
# documentation describes them; refused by name rather than failing on an option halfway through a conversion.
MINIMUM_CANN = (5, 0)


def cann_too_old(version: str) -> bool:
    """Whether a CANN version (``5.1.RC2``, ``7.0.0``, ``20.2.0``, ``3.3.0.alpha001``) is older than 5.0."""
    numbers = [int(n) for n in re.findall(r"\d+", version)[:2]]
    if not numbers:
        return False  # unreadable: nothing to refuse it for
    major = numbers[0]
    if major >= 20:  # the 20.x series came before 3.x
        return True
    return (major, numbers[1] if len(numbers) > 1 else 0) < MINIMUM_CANN


def _values(output: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for line in output.splitlines():
        key, sep, value = line.partition("=")
        if sep and key and " " not in key:
            found.setdefault(key.strip(), value.strip())  # the first wins: the env scripts are listed in order
    return found


def _env_scripts(output: str) -> tuple[str, ...]:
    return tuple(line.partition("=")[2].strip() for line in output.splitlines() if line.startswith("env_script="))


@dataclass(frozen=True)
class HostTools:
    """What the host has once its env script is sourced."""

    paths: dict[str, str]  # tool -> its path there ("" when missing): atc, msame, npu-smi, python3
    cann_version: str  # from the toolkit's version.info; "" when none was found
    cann_version_file: str
    ais_bench: bool
    ais_bench_version: str
    npu_smi: NpuSmiInfo | None  # None: no npu-smi on the host, or a table it could not read
    npu_smi_error: str = ""  # why npu_smi is None where npu-smi was there

    def versions(self) -> dict[str, str]:
        """What run.json and model.json record of the host's tools."""
        found = {"cann": self.cann_version, "ais_bench": self.ais_bench_version,
                 "npu_smi": self.npu_smi.version if self.npu_smi is not None else ""}
        return {name: value for name, value in found.items() if value}


@dataclass
class Host:
    """A stage's session on one host (`open_host`)."""

    options: RemoteOptions
    address: HostAddress
    connection: Connection
    workdir: str  # absolute, on the host
    free_kb: int | None  # free space in the working folder; None when df did not say
    env_script: str  # the script sourced before every tool ("" none)
    env_scripts_found: tuple[str, ...]  # every candidate that exists there, in the order they are tried
    has_rsync: bool
    _tools: HostTools | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        return self.address.text

    @property
    def transfer(self) -> Transfer:
        """rsync when both ends have it (the one here is needed too), else sftp (`infer.remote._transfer`)."""
        import shutil

        if self.has_rsync and shutil.which("rsync") is not None:
            return Rsync(self.connection)
        return Sftp(self.connection)

    def path(self, *parts: str) -> str:
        """A path inside the working folder; a part that is absolute, empty or climbs out (``..``) is refused."""
        return inside(self.workdir, *parts)

    def env_said(self) -> str:
        """Which env script is used and why, one phrase."""
        if self.options.env_script:
            return f"env script {self.env_script} (--env-script)"
        if self.env_script:
            return f"env script {self.env_script} (found there)"
        return "no CANN env script found (the login's environment as it is)"

    def run(self, argv: list[str], *, timeout: float | None = None, cwd: str = "", make_cwd: bool = False,
            tty: bool = False, what: str = "", sourced: bool = True) -> RemoteResult:
        """`argv` run on the host: with the env script sourced (`sourced`), in `cwd` (made first: `make_cwd`)."""
        kwargs = {} if timeout is None else {"timeout": timeout}
        return self.connection.run(argv, env_script=self.env_script if sourced else "", cwd=cwd, make_cwd=make_cwd,
                                   tty=tty, what=what, **kwargs)

    def tools(self) -> HostTools:
        """The host's tools, versions and NPUs, asked once per session."""
        if self._tools is None:
            result = self.run(["bash", "-c", _TOOLS, "infer-tools"], what="looking at the host's tools")
            head, _, table = result.output.partition("npu_smi_begin\n")
            values = _values(head)
            npu_smi: NpuSmiInfo | None = None
            error = ""
            if values.get("path.npu-smi"):
                try:
                    npu_smi = parse_npu_smi_info(table)
                except NpuSmiFormatError as exc:
                    first = next((line.strip() for line in table.splitlines() if line.strip()), "no output")
                    error = f"npu-smi info printed no table infer reads ({exc}); it said: {first}"
            self._tools = HostTools(
                paths={tool: values.get(f"path.{tool}", "") for tool in ("atc", "msame", "npu-smi", "python3")},
                cann_version=values.get("cann_version", ""), cann_version_file=values.get("cann_version_file", ""),
                ais_bench=values.get("ais_bench") == "1", ais_bench_version=values.get("ais_bench_version", ""),
                npu_smi=npu_smi, npu_smi_error=error)
        return self._tools


def inside(root: str, *parts: str) -> str:
    """`parts` joined under `root`, each a relative path that stays inside it."""
    path = PurePosixPath(root)
    for part in parts:
        relative = PurePosixPath(part)
        if (not part or relative.is_absolute() or ".." in relative.parts or any(c in part for c in "\0\n\r\t")):
            raise RemoteError(f"{part!r}: not a path inside the host's working folder {root}")
        path = path / relative
    return str(path)


@contextlib.contextmanager
def open_host(options: RemoteOptions, address: HostAddress | None = None) -> Iterator[Host]:
    """A session on the host (one of `options`'s, or its only one): connected, its working folder made, its env
    script and transfer chosen. The connection is shared with any other session on the same host open meanwhile
    (a sharded run's shards), and closed with the last."""
    address = address or options.address
    with SHARED.connection(options, address) as connection:
        given = [options.env_script] if options.env_script else []
        probe = connection.run(["bash", "-c", _PROBE, "infer-probe", options.workdir, *given, *ENV_SCRIPTS],
                               what="looking at the host")
        values = _values(probe.output)
        workdir = values.get("workdir", "")
        if values.get("workdir_ok") != "1" or not workdir.startswith("/"):
            raise RemoteError(f"{address.text}: {options.workdir}: cannot create or write the working folder there",
                              hint="give --remote-workdir a folder the ssh user may write (default "
                                   "~/.infer-remote)")
        found = _env_scripts(probe.output)
        if options.env_script and not (found and found[0] == _expanded(options.env_script, found)):
            raise RemoteError(f"{address.text}: {options.env_script}: no such file on the host (--env-script)",
                              hint="infer doctor --host lists the CANN env scripts it finds there")
        free = values.get("free_kb", "")
        yield Host(options=options, address=address, connection=connection, workdir=workdir,
                   free_kb=int(free) if free.isdigit() else None,
                   env_script=found[0] if found else "", env_scripts_found=tuple(dict.fromkeys(found)),
                   has_rsync=bool(values.get("rsync")))


def _expanded(script: str, found: tuple[str, ...]) -> str:
    """The given script as the probe printed it (``~/`` expanded there): the first found when it exists."""
    if script.startswith("~/") and found and found[0].endswith(script[1:]):
        return found[0]
    return script
