"""How to reach an Ascend host (`RemoteOptions`): the one declaration of `--host`, `--remote-workdir`, `--env-script`
and `--ssh-option`, of the pipeline's [remote] table and of their help. Standard library only (no numpy): `infer
convert --help` builds its flags from it.

A host is written as ssh takes it, ``[USER@]HOST[:PORT]``, where HOST may be an alias of ``~/.ssh/config``: infer
runs the system's ssh, so the user's config (aliases, ProxyJump, keys, agents) works as for every other tool.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from binio.errors import InferError
from infer._option_fields import setting, type_name

DEFAULT_WORKDIR = "~/.infer-remote"


class RemoteError(InferError):
    """A host that cannot be reached or used: its message starts with the host's name (``ascend01: ...``)."""


# What a host may be called: an ssh_config alias, a DNS name, an IPv4 address or a bracketed IPv6 one. Never a
# leading '-' (ssh would read it as an option), never a character a shell or ssh_config's tokens would act on.
_NAME = r"[A-Za-z0-9_][A-Za-z0-9_.-]*"
_HOST = re.compile(rf"^(?:(?P<user>{_NAME})@)?(?:(?P<name>{_NAME})|\[(?P<ipv6>[0-9A-Fa-f:.]+)\])(?::(?P<port>\d+))?$")


@dataclass(frozen=True)
class HostAddress:
    """One ``[USER@]HOST[:PORT]``."""

    text: str  # as the user wrote it: what every message names
    host: str
    user: str = ""
    port: int | None = None

    def ssh_args(self) -> list[str]:
        """The address as ssh's own arguments: ``-p PORT`` and ``[USER@]HOST`` (the destination, last)."""
        port = ["-p", str(self.port)] if self.port is not None else []
        return [*port, f"{self.user}@{self.host}" if self.user else self.host]

    def __str__(self) -> str:
        return self.text


def parse_host(text: str, where: str = "--host") -> HostAddress:
    """``ascend01``, ``me@10.0.0.5:2222``, ``[fe80::1]:22`` -> a HostAddress; anything else refused by name."""
    match = _HOST.match(text.strip())
    if match is None:
        raise RemoteError(f"{where} {text!r}: expected [USER@]HOST[:PORT] (an ssh_config alias, a host name or an "
                          "address; IPv6 in brackets)", hint="e.g. --host ascend01 or --host me@10.0.0.5:2222")
    port = int(match["port"]) if match["port"] else None
    if port is not None and not 0 < port < 65536:
        raise RemoteError(f"{where} {text!r}: port {port} is not between 1 and 65535")
    return HostAddress(text=text.strip(), host=match["name"] or match["ipv6"], user=match["user"] or "", port=port)


def _hosts(text: Any, flag: str) -> tuple[str, ...]:
    """``a,b`` (or the list a repeated flag gives) -> ("a", "b"), each checked."""
    texts = text if isinstance(text, list) else [text]
    hosts = tuple(part.strip() for item in texts for part in str(item).split(",") if part.strip())
    if not hosts:
        raise RemoteError(f"{flag}: expected [USER@]HOST[:PORT], got nothing")
    for host in hosts:
        parse_host(host, flag)
    if len(set(hosts)) != len(hosts):
        raise RemoteError(f"{flag} {','.join(hosts)}: a host is named twice")
    return hosts


def _host_table(value: Any, where: str) -> tuple[str, ...]:
    """``host = "ascend01"`` or ``host = ["a", "b"]``."""
    if isinstance(value, str):
        return _hosts(value, where)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return _hosts(",".join(value), where)
    raise RemoteError(f"{where}: expected a host name or a list of them, got {type_name(value)} {value!r}")


# The ssh options a command line or pipeline file may add (as ssh's ``-o KEY=VALUE``). Anything that runs a local
# command (ProxyCommand, LocalCommand, KnownHostsCommand...) stays in ~/.ssh/config, which the user wrote: a
# pipeline file received from someone else must not run commands here. StrictHostKeyChecking and BatchMode are
# infer's to keep (a host key is checked as ssh checks it; no prompt ever waits), the Control* options its own.
SSH_OPTIONS: tuple[str, ...] = (
    "AddressFamily", "BindAddress", "CertificateFile", "CheckHostIP", "Ciphers", "Compression",
    "ConnectionAttempts", "ConnectTimeout", "GlobalKnownHostsFile", "HostKeyAlgorithms", "HostKeyAlias",
    "HostbasedAcceptedAlgorithms", "IdentitiesOnly", "IdentityAgent", "IdentityFile", "IPQoS", "KexAlgorithms",
    "LogLevel", "MACs", "Port", "PreferredAuthentications", "ProxyJump", "PubkeyAcceptedAlgorithms",
    "PubkeyAcceptedKeyTypes", "PubkeyAuthentication", "ServerAliveCountMax", "ServerAliveInterval",
    "TCPKeepAlive", "User", "UserKnownHostsFile", "VerifyHostKeyDNS",
)
_SSH_OPTION_NAMES = {name.lower(): name for name in SSH_OPTIONS}


def check_ssh_option(text: str, where: str = "--ssh-option") -> str:
    """``IdentityFile=~/.ssh/ascend`` (or ssh_config's ``IdentityFile ~/.ssh/ascend``) -> ``KEY=VALUE`` for ssh's
    ``-o``; refuses a key outside `SSH_OPTIONS`, naming why."""
    key, sep, value = text.partition("=") if "=" in text else text.strip().partition(" ")
    key, value = key.strip(), value.strip()
    if not sep or not key or not value or any(c in text for c in "\n\0'\"\\"):
        raise RemoteError(f"{where} {text!r}: expected KEY=VALUE, an ssh option (e.g. IdentityFile=~/.ssh/ascend), "
                          "with no quote, backslash or line break")
    known = _SSH_OPTION_NAMES.get(key.lower())
    if known is None:
        why = ("infer keeps ssh's host key check and never waits at a prompt"
               if key.lower() in ("stricthostkeychecking", "batchmode") else
               "infer owns the connection's control socket" if key.lower().startswith("control") else
               "it is not one infer passes on (one that runs a command here belongs in ~/.ssh/config)")
        raise RemoteError(f"{where} {text!r}: {key}: {why}",
                          hint=f"put it in ~/.ssh/config under a Host entry; allowed here: {', '.join(SSH_OPTIONS)}")
    return f"{known}={value}"


def _ssh_options(value: Any, flag: str) -> tuple[str, ...]:
    texts = value if isinstance(value, list) else [value]
    return tuple(check_ssh_option(str(text), flag) for text in texts)


def _ssh_option_table(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(check_ssh_option(v, where) for v in value)
    raise RemoteError(f"{where}: expected a list of KEY=VALUE ssh options, got {type_name(value)} {value!r}")


def _workdir(text: Any, where: str) -> str:
    value = str(text)
    if not value or "\n" in value or "\0" in value:
        raise RemoteError(f"{where} {value!r}: expected a folder on the host (absolute, or ~/... under its home)")
    if not (value.startswith("/") or value == "~" or value.startswith("~/")):
        raise RemoteError(f"{where} {value!r}: expected an absolute folder on the host, or ~/... under its home",
                          hint=f"e.g. {DEFAULT_WORKDIR}")
    if ".." in value.split("/"):
        raise RemoteError(f"{where} {value!r}: '..' in the host's working folder")
    return value.rstrip("/") or "/"


def _workdir_table(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise RemoteError(f"{where}: expected a folder on the host, got {type_name(value)} {value!r}")
    return _workdir(value, where)


def _env_script(text: Any, where: str) -> str:
    value = str(text)
    if "\n" in value or "\0" in value or not (value.startswith("/") or value.startswith("~/")):
        raise RemoteError(f"{where} {value!r}: expected the path of a script on the host (absolute, or ~/...)",
                          hint="e.g. /usr/local/Ascend/ascend-toolkit/set_env.sh")
    return value


def _env_script_table(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise RemoteError(f"{where}: expected a path on the host, got {type_name(value)} {value!r}")
    return _env_script(value, where) if value else ""


@dataclass(frozen=True)
class RemoteOptions:
    """An Ascend host reached over SSH, where ATC, msame and ais_bench run. In pipeline.toml: [remote]."""

    host: tuple[str, ...] = setting((), parse=_hosts, decode=_host_table, enables=True,
                                    help="Run ATC, msame or ais_bench on this Ascend host over SSH: [USER@]HOST[:PORT] "
                                         "or a ~/.ssh/config alias; a,b splits a run's batches over hosts.")
    workdir: str = setting(DEFAULT_WORKDIR, flag="--remote-workdir", parse=_workdir, decode=_workdir_table,
                           help="The folder on the host that holds what infer sends and the tools write.")
    env_script: str = setting("", parse=_env_script, decode=_env_script_table,
                              shown="the first of CANN's set_env.sh found on the host",
                              help="The script sourced on the host before atc, msame or ais_bench run (CANN's "
                                   "set_env.sh).")
    ssh_options: tuple[str, ...] = setting((), flag="--ssh-option", repeat=True, parse=_ssh_options,
                                           decode=_ssh_option_table,
                                           help="One more ssh option, KEY=VALUE (IdentityFile=~/.ssh/ascend, "
                                                "ProxyJump=bastion); repeatable.")
    def __post_init__(self) -> None:
        for host in self.host:
            parse_host(host)

    @property
    def addresses(self) -> tuple[HostAddress, ...]:
        return tuple(parse_host(host) for host in self.host)

    @property
    def address(self) -> HostAddress:
        """The one host of a stage that runs on one (convert, a plain run, doctor)."""
        if len(self.host) != 1:
            raise RemoteError(f"--host {','.join(self.host)}: this runs on one host; several split a run's batches "
                              "(infer run)" if self.host else "no --host given")
        return parse_host(self.host[0])

    def on(self, host: str) -> RemoteOptions:
        """These options for one of their hosts."""
        return replace(self, host=(host,))


def remote_given(options: RemoteOptions | None) -> bool:
    """Whether the options name a host at all (a RemoteOptions() with no host is "run here")."""
    return options is not None and bool(options.host)
