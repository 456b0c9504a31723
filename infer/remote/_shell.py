"""A command on the host, as one line for its login shell: an argv, every word quoted (`shlex.quote`), run by a fixed
bash script that takes everything else as its arguments.

ssh hands the host one string, which the user's login shell parses; so nothing of the user's (a model's file name,
a node name, an ``--atc-arg``, the env script's path) is ever pasted into code. The script sources the CANN
environment script when one is named (with no arguments of its own: set_env.sh reads ``$1`` in some releases),
changes into the working folder, refuses a tool that is not on the host's PATH, runs the argv, and ends with a
marker line carrying the tool's exit status under a nonce. A result without the marker is one the connection cut:
ssh's own exit code (255) cannot be told apart from a tool's (ATC exits 255 on failure).
"""

from __future__ import annotations

import re
import secrets
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

# $1 nonce, $2 env script ("" for none; "~/..." under the host's home), $3 working folder ("" for none; "+DIR" made
# first if missing), then argv.
_SCRIPT = r"""nonce=$1 env=$2 dir=$3
shift 3
if [ -n "$env" ]; then
  case $env in "~/"*) env=$HOME/${env#"~/"} ;; esac
  if [ ! -f "$env" ]; then printf '\n%s env-missing\n' "$nonce"; exit 97; fi
  args=("$@"); set --
  . "$env" >/dev/null 2>&1
  set -- "${args[@]}"
fi
case $dir in +*) dir=${dir#+}; mkdir -p -- "$dir" ;; esac
if [ -n "$dir" ]; then cd -- "$dir" || { printf '\n%s no-dir\n' "$nonce"; exit 98; }; fi
if ! command -v -- "$1" >/dev/null 2>&1; then printf '\n%s no-tool\n' "$nonce"; exit 127; fi
"$@"
status=$?
printf '\n%s exit %d\n' "$nonce" "$status"
exit "$status"
"""

ENV_MISSING = "env-missing"
NO_DIR = "no-dir"
NO_TOOL = "no-tool"


@dataclass(frozen=True)
class RemoteCommand:
    """One command for the host: its text for ssh, and the nonce its end marker carries."""

    argv: tuple[str, ...]  # what runs there, as the tool sees it
    text: str  # the line the host's login shell parses
    nonce: str


def remote_command(argv: Sequence[str], *, env_script: str = "", cwd: str = "",
                   make_cwd: bool = False) -> RemoteCommand:
    """`argv` run on the host by bash, after sourcing `env_script` and changing into `cwd` (made first when
    `make_cwd`)."""
    nonce = f"infer-remote-{secrets.token_hex(8)}"
    words = ["bash", "-c", _SCRIPT, "infer-remote", nonce, env_script, f"+{cwd}" if make_cwd else cwd, *argv]
    return RemoteCommand(argv=tuple(str(a) for a in argv), text=shlex.join(words), nonce=nonce)


@dataclass(frozen=True)
class Ended:
    """How a remote command ended, read from its output."""

    status: str  # "exit", ENV_MISSING, NO_DIR, NO_TOOL; "" when the marker never came (the connection was cut)
    code: int  # the tool's exit status ("exit"), else the script's
    output: str  # what the tool printed, the marker taken out


def ended(output: str, nonce: str, returncode: int) -> Ended:
    """Splits the marker off `output` (a tty's \\r\\n made \\n); what follows the marker is ssh's own (``Shared
    connection to ... closed.``), not the tool's."""
    text = output.replace("\r\n", "\n")
    markers = re.finditer(rf"(?:^|\n){re.escape(nonce)} (exit (-?\d+)|{ENV_MISSING}|{NO_DIR}|{NO_TOOL})(?=\n|\Z)", text)
    found = next(iter(reversed(list(markers))), None)  # the last: a tool cannot print the nonce before it
    if found is None:
        return Ended(status="", code=returncode, output=text)
    kind = found.group(1)
    status = "exit" if kind.startswith("exit") else kind
    code = int(found.group(2)) if found.group(2) is not None else returncode
    printed = text[: found.start()].rstrip("\n")  # less the line break the marker adds before itself
    return Ended(status=status, code=code, output=printed + "\n" if printed else "")
