"""The working folder on the host, and what goes in and out of it.

    WORKDIR/store/ab/xxh128-ab12...     every file sent, once, named by its digest (the digests dataset.json and
                                        model.json record: xxh128 for bins, sha256 for models)
    WORKDIR/models/<key>/...            a model's files as ATC and the tools see them (hard links into store/)
    WORKDIR/data/<key>/<i>/000000.bin   one folder per model input, as msame and ais_bench take them (links too)
    WORKDIR/runs/<id>/                  one tool start: its output folder, its dump; removed once fetched

A file is sent only when no file of its digest is in store/ yet: the same pb, om, configuration or bin is never
sent twice, whichever model folder, dataset or run it belongs to, and a second run sends nothing. A folder of links
is made once (a marker says it is complete) and used as it is by every later run of the same files. Every path is
built inside WORKDIR (`infer.remote._host.inside`).
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from binio.digest import BIN_DIGEST, digest_file
from infer.remote._host import Host
from infer.remote._ssh import disk_full
from infer.remote.options import RemoteError
from infer.remote.record import Traffic

log = logging.getLogger(__name__)

STORE = "store"
COMPLETE = ".infer-complete"  # in a folder of links: every link is there
MARKER = "-"  # a link step's source that makes its target an empty file (a marker)
_SPARE_KB = 64 * 1024  # what a send leaves free on the host's disk at least: the tools write there next
_ARGV_LINKS = 32 * 1024  # characters of link pairs passed as arguments; more go as a list file


@dataclass(frozen=True)
class Blob:
    """A local file as the store names it."""

    local: Path
    algorithm: str  # xxh128 | sha256
    digest: str  # hex
    size: int

    @property
    def name(self) -> str:
        return f"{self.algorithm}-{self.digest}"

    @property
    def stored(self) -> str:
        """Its path in the working folder."""
        return f"{STORE}/{self.digest[:2]}/{self.name}"


def blob_of(path: Path, algorithm: str = BIN_DIGEST, digest: str = "") -> Blob:
    """`path` as a blob: its digest as recorded (`digest`), or read now."""
    return Blob(local=Path(path), algorithm=algorithm, digest=digest or digest_file(algorithm, Path(path)),
                size=Path(path).stat().st_size)


def folder_key(placed: Sequence[tuple[Blob, str]]) -> str:
    """A folder of links' name: the digest of what it holds (each file's place and digest)."""
    listing = "\n".join(f"{relative}\t{blob.name}" for blob, relative in sorted(placed, key=lambda p: p[1]))
    return hashlib.sha256(listing.encode()).hexdigest()[:20]


# $1 the working folder, then markers to look for. Prints free_kb=, marker=PATH, blob=NAME<TAB>SIZE lines.
_STATE = r"""cd -- "$1" || exit 1; shift
printf 'free_kb=%s\n' "$(df -Pk . 2>/dev/null | awk 'NR==2 {print $4}')"
for marker in "$@"; do [ -e "$marker" ] && printf 'marker=%s\n' "$marker"; done
[ -d store ] && find store -type f -name '*-*' ! -path '*/.infer-partial/*' -printf 'blob=%f\t%s\n'
exit 0
"""

# $1 the working folder, $2 a list file of SOURCE<TAB>TARGET lines ("" for none), then SOURCE TARGET pairs; paths
# relative to the working folder. A hard link, else a copy (a folder on another file system); the SOURCE "-" makes
# TARGET an empty file (a folder's marker, listed after its links; "-" because read drops an empty leading field).
# One process for thousands of links: python3 where the host has it (CANN's own tools need it; a fork per file, as
# a shell loop makes, cost a first run of 2,000 bins four times what sending them did), else bash, a fork a file.
_LINK = r"""cd -- "$1" || exit 1
if command -v python3 >/dev/null 2>&1; then exec python3 -c '
import os, shutil, sys
listed, pairs = sys.argv[1], sys.argv[2:]
if listed:
    with open(listed) as handle:
        pairs += [part for line in handle.read().splitlines() if line for part in line.split("\t", 1)]
    os.remove(listed)
made = set()
for source, target in zip(pairs[0::2], pairs[1::2]):
    folder = os.path.dirname(target)
    if folder and folder not in made:
        if not os.path.isdir(folder):
            os.makedirs(folder)
        made.add(folder)
    if source == "-":
        open(target, "w").close()
        continue
    if os.path.lexists(target):
        os.remove(target)
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)
' "${@:2}"; fi
list=$2; shift 2
made=
link() {
  case $2 in */*) [ "${2%/*}" = "$made" ] || { mkdir -p -- "${2%/*}" && made=${2%/*}; } || return 1 ;; esac
  if [ "$1" = - ]; then : > "$2"; else ln -f -- "$1" "$2" 2>/dev/null || cp -f -- "$1" "$2"; fi
}
if [ -n "$list" ]; then
  while IFS=$'\t' read -r source target; do link "$source" "$target" || exit 1; done < "$list"
  rm -f -- "$list"
fi
while [ $# -ge 2 ]; do link "$1" "$2" || exit 1; shift 2; done
"""


@dataclass(frozen=True)
class Placement:
    """Files (sent to the store) linked at their paths in the working folder; `complete` names the folder's marker,
    written once every link is there: a folder whose marker is there is used as it is."""

    placed: tuple[tuple[Blob, str], ...]
    complete: str = ""


class Workspace:
    """The host's working folder for one stage, and the traffic it had."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self.traffic = Traffic()

    def _state(self, markers: Sequence[str] = ()) -> tuple[dict[str, int], int | None, set[str]]:
        result = self.host.run(["bash", "-c", _STATE, "infer-state", self.host.workdir, *markers], sourced=False,
                               what="listing the working folder")
        stored: dict[str, int] = {}
        free: int | None = None
        present: set[str] = set()
        for line in result.output.splitlines():
            key, _, value = line.partition("=")
            if key == "blob":
                name, _, size = value.partition("\t")
                stored[name] = int(size) if size.strip().isdigit() else -1
            elif key == "free_kb" and value.strip().isdigit():
                free = int(value)
            elif key == "marker":
                present.add(value)
        return stored, free, present

    def stage(self, placements: Sequence[Placement]) -> None:
        """Gives the host what `placements` need, in as few commands as it can: one listing of the store (and of the
        folders' markers), the files whose digest is not there yet sent (the others counted as kept), and every
        folder not complete yet linked in one command. Its seconds count that whole step, not the copy alone."""
        start = time.monotonic()
        markers = [self._inside(p.complete) for p in placements if p.complete]
        stored, free, present = self._state(markers)
        unique = list({blob.name: blob for p in placements for blob, _ in p.placed}.values())
        missing = [blob for blob in unique if stored.get(blob.name) != blob.size]
        kept = [blob for blob in unique if blob not in missing]
        needed = sum(blob.size for blob in missing)
        if missing and free is not None and needed // 1024 + _SPARE_KB > free:
            raise disk_full(self.host.name, f"{needed / 1e6:.1f} MB to send, {free / 1e3:.1f} MB free",
                            self.host.workdir)
        moved = self.host.transfer.send([(blob.local, blob.stored) for blob in missing], self.host.workdir)
        log.info("%s: sent %d files (%d bytes) in %.2f s; %d already there", self.host.name, moved.files,
                 moved.bytes, moved.seconds, len(kept))
        pairs = [pair for p in placements if not p.complete or p.complete not in present
                 for pair in [*((blob.stored, self._inside(relative)) for blob, relative in p.placed),
                              *([(MARKER, p.complete)] if p.complete else [])]]
        if pairs:
            self._link(pairs, "linking the files it sent")
        self.traffic = self.traffic.plus(Traffic(sent_files=moved.files, sent_bytes=moved.bytes,
                                                 kept_files=len(kept), kept_bytes=sum(b.size for b in kept),
                                                 sending_s=time.monotonic() - start))

    def _inside(self, relative: str) -> str:
        """`relative` checked to stay inside the working folder (`Host.path` refuses it otherwise)."""
        self.host.path(relative)
        return relative

    def _link(self, pairs: Sequence[tuple[str, str]], what: str) -> None:
        listed = ""
        args: list[str] = []
        if sum(len(a) + len(b) + 2 for a, b in pairs) > _ARGV_LINKS:  # too long for one command line: a file
            listed = f"runs/.links-{os.getpid()}-{time.monotonic_ns()}.tsv"
            with tempfile.NamedTemporaryFile("w", prefix="infer-links-", suffix=".tsv", delete=False) as handle:
                handle.write("".join(f"{source}\t{target}\n" for source, target in pairs))
            try:
                self.host.transfer.send([(Path(handle.name), listed)], self.host.workdir)
            finally:
                os.unlink(handle.name)
        else:
            args = [part for pair in pairs for part in pair]
        result = self.host.run(["bash", "-c", _LINK, "infer-link", self.host.workdir, listed, *args],
                               sourced=False, what=what)
        if result.code != 0:
            said = result.output.strip().splitlines()[-1] if result.output.strip() else "no reason given"
            raise RemoteError(f"{self.host.name}: could not place the files in {self.host.workdir} ({said})")

    def keep(self, relative: str, blob: Blob) -> None:
        """A file the host made (the om ATC wrote) put in the store under its digest, so that a later stage that
        needs it sends nothing."""
        try:
            self._link([(self._inside(relative), blob.stored)], "keeping the om it built")
        except RemoteError as exc:
            log.warning("%s: the om it built was not kept in its store (%s)", self.host.name, exc.message)

    def fetch(self, relative: str, local: Path, *, exclude: Sequence[str] = ()) -> None:
        moved = self.host.transfer.fetch(self.host.path(relative), local, exclude=exclude)
        self.traffic = self.traffic.plus(Traffic(fetched_files=moved.files, fetched_bytes=moved.bytes,
                                                 fetching_s=moved.seconds))

    def fetch_file(self, relative: str, local: Path) -> None:
        moved = self.host.transfer.fetch_file(self.host.path(relative), local)
        self.traffic = self.traffic.plus(Traffic(fetched_files=moved.files, fetched_bytes=moved.bytes,
                                                 fetching_s=moved.seconds))

    def exists(self, relative: str) -> bool:
        return self._inside(relative) in self._state([relative])[2]

    def remove(self, relative: str) -> None:
        """A folder of the working folder, and all in it (a run's, once fetched)."""
        self.host.run(["rm", "-rf", "--", self.host.path(relative)], sourced=False, what="removing a run folder")
