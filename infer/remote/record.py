"""What a stage that ran on a host records of it (`RemoteRecord`): run.json's ``remote`` and model.json's
``converted.settings.remote``, so that a report says where the om was built and run, with what, and what was sent.

Both are optional keys of their documents (absent for a stage run here), so neither schema's version changes
(docs/contracts.md)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any


@dataclass(frozen=True)
class Traffic:
    """Files moved for one stage: sent (their digest was not on the host yet), kept (already there, not sent) and
    fetched back, with the seconds each took: sending's the whole step that gives the host its files (the store
    listed, what is missing sent, the folders of links made), fetching's the copy back."""

    sent_files: int = 0
    sent_bytes: int = 0
    kept_files: int = 0
    kept_bytes: int = 0
    fetched_files: int = 0
    fetched_bytes: int = 0
    sending_s: float = 0.0
    fetching_s: float = 0.0

    def plus(self, other: Traffic) -> Traffic:
        return Traffic(sent_files=self.sent_files + other.sent_files, sent_bytes=self.sent_bytes + other.sent_bytes,
                       kept_files=self.kept_files + other.kept_files, kept_bytes=self.kept_bytes + other.kept_bytes,
                       fetched_files=self.fetched_files + other.fetched_files,
                       fetched_bytes=self.fetched_bytes + other.fetched_bytes,
                       sending_s=self.sending_s + other.sending_s, fetching_s=self.fetching_s + other.fetching_s)

    def to_json(self) -> dict[str, Any]:
        return {"sent": {"files": self.sent_files, "bytes": self.sent_bytes, "seconds": round(self.sending_s, 3)},
                "kept": {"files": self.kept_files, "bytes": self.kept_bytes},
                "fetched": {"files": self.fetched_files, "bytes": self.fetched_bytes,
                            "seconds": round(self.fetching_s, 3)}}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Traffic:
        sent, kept, fetched = data.get("sent", {}), data.get("kept", {}), data.get("fetched", {})
        return cls(sent_files=int(sent.get("files", 0)), sent_bytes=int(sent.get("bytes", 0)),
                   kept_files=int(kept.get("files", 0)), kept_bytes=int(kept.get("bytes", 0)),
                   fetched_files=int(fetched.get("files", 0)), fetched_bytes=int(fetched.get("bytes", 0)),
                   sending_s=float(sent.get("seconds", 0.0)), fetching_s=float(fetched.get("seconds", 0.0)))

    def describe(self) -> str:
        """``sent 3 files (1.2 MB) in 0.4 s, 12 already there; fetched 6 (96 kB) in 0.1 s``."""
        sent = (f"sent {self.sent_files} file{'s' if self.sent_files != 1 else ''} ({_size(self.sent_bytes)}) in "
                f"{self.sending_s:.1f} s" if self.sent_files else "sent nothing")
        kept = f", {self.kept_files} already there" if self.kept_files else ""
        fetched = (f"; fetched {self.fetched_files} ({_size(self.fetched_bytes)}) in {self.fetching_s:.1f} s"
                   if self.fetched_files else "")
        return sent + kept + fetched


def _size(count: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count} B"


@dataclass(frozen=True)
class RemoteRecord:
    """Where on which host a tool ran, as what, and what went back and forth."""

    host: str  # as the user named it (--host)
    workdir: str  # the host's working folder, absolute there
    folder: str  # where the tool ran, inside it
    env_script: str  # the script sourced first ("" none)
    tool: str  # the tool's path on the host
    transfer: str  # rsync | sftp
    versions: dict[str, str] = field(default_factory=dict)  # cann, ais_bench, npu_smi: what the host said
    chips: tuple[str, ...] = ()  # npu-smi's chip names there
    traffic: Traffic = field(default_factory=Traffic)

    def to_json(self) -> dict[str, Any]:
        return {"host": self.host, "workdir": self.workdir, "folder": self.folder, "env_script": self.env_script,
                "tool": self.tool, "transfer": self.transfer, "versions": dict(self.versions),
                "chips": list(self.chips), **self.traffic.to_json()}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RemoteRecord:
        return cls(host=str(data.get("host", "")), workdir=str(data.get("workdir", "")),
                   folder=str(data.get("folder", "")), env_script=str(data.get("env_script", "")),
                   tool=str(data.get("tool", "")), transfer=str(data.get("transfer", "")),
                   versions={str(k): str(v) for k, v in dict(data.get("versions", {})).items()},
                   chips=tuple(str(c) for c in data.get("chips", [])), traffic=Traffic.from_json(data))


def merged_remote(first: RemoteRecord | None, other: RemoteRecord | None) -> RemoteRecord | None:
    """Shards' records as one: the first's, with every host named and every shard's traffic summed."""
    if other is None or first is None:
        return first or other
    hosts = ", ".join(dict.fromkeys([*first.host.split(", "), other.host]))
    return replace(first, host=hosts, traffic=first.traffic.plus(other.traffic))
