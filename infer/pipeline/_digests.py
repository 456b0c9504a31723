"""The digests of what a stage reads and writes, kept between runs with what each file was when it was read.

A re-run with nothing to do decides so from the digests it recorded, as make and dvc do: each file's digest is kept
with its size, modification time and inode, and a file whose three are unchanged is not read again. A file modified
within RACY_NS of being digested may have kept its time (a coarse clock), so its digest is trusted only once its
time is older than that: such a file is read again (when the state is saved, or on the next run), then trusted.

A folder (a dataset of 50,000 images) is kept as one record: the digest of its listing with each file's size, time
and inode, the folder's digest, and its files' entries packed in one text. A re-run lists the folder, stats each
file and compares one digest; the entries are unpacked only when the listing differs, and then only the files
whose size, time or inode changed are read (git's index works alike). Kept per file under absolute paths, the
check was a lookup and a parse per image and the state file 7.9 MB of keys: a second at 50,000 images (issue 42).

Files are digested as bins are (XXH3-128, `binio.digest`): a re-run reads every bin the stages made, and sha256
made that check cost 0.4 s of CPU per 600 MB of bins, where XXH3-128 costs a few hundredths.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from binio.bin_entry import is_hex_digest
from binio.digest import BIN_DIGEST, digest_file, digest_pieces

# How much older than its digest a file's modification time must be for the digest to be trusted without reading
# the file: file systems keep times of a coarse clock (a few ms; NFS and FAT a second or two).
RACY_NS = 2_000_000_000
_TIME_DIGITS = 20  # nanoseconds since 1970 are 19 digits until 2286; a longer field is not one this cache wrote


def _named(status: os.stat_result) -> str:
    """What an entry records of a file before its digest: ``size:mtime_ns:inode:``."""
    return f"{status.st_size}:{status.st_mtime_ns}:{status.st_ino}:"


def _trusted(entry: str | None, named: str) -> str | None:
    """The digest `entry` (``size:mtime_ns:inode:digest:taken_ns``) records, if it names the file as `named` finds
    it and the file's time is older than the digest by more than RACY_NS; None otherwise (an entry that is not
    what `DigestCache` writes included: its file is read again, so a wrong entry can only make a file be read)."""
    if entry is None or not entry.startswith(named):
        return None
    digest, _, taken = entry[len(named):].partition(":")
    mtime = named.split(":")[1]
    if (not is_hex_digest(digest) or not (taken.isascii() and taken.isdigit() and len(taken) <= _TIME_DIGITS)
            or int(mtime) + RACY_NS >= int(taken)):
        return None
    return digest


def _racy(entry: str) -> bool:
    """Whether `entry` (one this cache wrote) was taken within RACY_NS of its file's last change."""
    fields = entry.split(":")
    return len(fields) == 5 and int(fields[1]) + RACY_NS >= int(fields[4])


@dataclass(frozen=True)
class FolderRecord:
    """A folder's digest, with the digest of the listing it was taken from and its files' entries."""

    listing: str  # digest of the sorted listing with each file's size, time and inode ("" from a state file: untrusted)
    digest: str  # the folder's digest, as `digest_path` takes it
    files: str  # "relative\0entry\0relative\0entry...": a path holds no NUL; unpacked only when the listing differs
    settled: bool = True  # every entry's digest trusted; the listing is recorded only then

    def entries(self) -> dict[str, str]:
        """relative path -> entry; empty for a packing that is not what `pack` writes (then every file is read)."""
        parts = self.files.split("\0")
        if len(parts) % 2:
            return {}
        return dict(zip(parts[0::2], parts[1::2], strict=True))

    @staticmethod
    def pack(entries: Iterable[tuple[str, str]]) -> str:
        return "\0".join(part for pair in entries for part in pair)

    def to_json(self) -> dict[str, str]:
        return {"listing": self.listing if self.settled else "", "digest": self.digest, "files": self.files}

    @classmethod
    def from_json(cls, data: Any) -> FolderRecord | None:
        if not (isinstance(data, dict) and all(isinstance(data.get(key), str) for key in ("listing", "digest",
                                                                                            "files"))):
            return None
        return cls(data["listing"], data["digest"], data["files"], settled=bool(data["listing"]))


class DigestCache:
    """Each file's digest as last taken, with the size, modification time and inode it had then; each folder's as
    one record (`FolderRecord`)."""

    def __init__(self, entries: dict[str, str] | None = None, folders: dict[str, FolderRecord] | None = None) -> None:
        # path -> "size:mtime_ns:inode:digest:taken_ns", as the state file keeps it: an entry is read only when its
        # file is looked at
        self.entries = dict(entries or {})
        self.folders = dict(folders or {})
        self.used: set[str] = set()
        self.used_folders: set[str] = set()
        self.read = 0  # files read (digested) through this cache, for the tests that count them
        self.rebuilt = 0  # folder records made again (their listing differed): the state file is saved then

    def digest(self, path: Path | str, status: os.stat_result | None = None) -> str:
        """The file's digest; `status` its os.stat, where the caller has it."""
        key = str(path)
        self.used.add(key)
        named = _named(status or os.stat(path))
        digest = _trusted(self.entries.get(key), named)
        if digest is None:
            self.entries[key] = entry = self._take(key, named)
            digest = entry.split(":")[3]
        return digest

    def folder_digest(self, folder: str) -> str:
        """`digest_path` of a folder: its listing compared whole with the one recorded, the files read only where
        the listing differs and their entries do not name them as they are."""
        listed = _listing(folder)
        listing = digest_pieces(BIN_DIGEST, (f"{relative}\0{named}\0".encode("utf-8", "surrogateescape")
                                             for relative, named in listed))
        self.used_folders.add(folder)
        record = self.folders.get(folder)
        if record is not None and record.settled and record.listing == listing:
            return record.digest
        recorded = record.entries() if record is not None else {}
        kept: list[tuple[str, str]] = []
        for relative, named in listed:
            path = os.path.join(folder, relative)
            # an entry of a state file that kept a folder's files one by one still spares its file a read
            entry = recorded.get(relative) or self.entries.get(path)
            if entry is None or _trusted(entry, named) is None:
                entry = self._take(path, named)
            kept.append((relative, entry))
        self.folders[folder] = record = _folder_record(listing, kept)
        self.rebuilt += 1
        return record.digest

    @property
    def changed(self) -> bool:
        """Whether this run took a digest or made a folder's record again: what the state file keeps then differs."""
        return bool(self.read or self.rebuilt)

    def _take(self, path: str, named: str) -> str:
        """The file read and digested: its entry."""
        taken = time.time_ns()
        digest = digest_file(BIN_DIGEST, path)
        self.read += 1
        return f"{named}{digest}:{taken}"

    def _settled(self, path: str, entry: str, now: int) -> str:
        """`entry`, or, where it was taken within RACY_NS of its file's change, that change is now older than
        RACY_NS and the file still has the size, time and inode it had, the entry taken again."""
        fields = entry.split(":")
        if len(fields) != 5 or not _racy(entry) or now <= int(fields[1]) + RACY_NS:
            return entry  # trusted already, or changed too lately to be trusted yet
        try:
            named = _named(os.stat(path))
        except OSError:
            return entry
        return self._take(path, named) if entry.startswith(named) else entry

    def settle(self) -> None:
        """Takes again each digest this run took within RACY_NS of its file's last change, once that change is older
        than RACY_NS and the file is as it was: the next run then trusts it without reading the file. (Left racy,
        the first re-run after a run read every file written in the last two seconds of a stage: at 50,000 images,
        some 100 MB of bins and outputs. Issue 42.) A file changed since is left to the next run, which reads it."""
        now = time.time_ns()
        for key in self.used:  # each entry trusted (`_trusted`) or taken this run: as this cache writes them
            self.entries[key] = self._settled(key, self.entries[key], now)
        for folder in self.used_folders:
            record = self.folders[folder]
            if record.settled:
                continue
            kept = [(relative, self._settled(os.path.join(folder, relative), entry, now))
                    for relative, entry in record.entries().items()]
            # the folder's digest made again from them: a file rewritten in place with its size, time and inode
            # (what the racy rule is for) has another digest now, and the folder with it
            self.folders[folder] = _folder_record(record.listing, kept)

    def to_json(self) -> dict[str, Any]:
        """What the state file keeps: the entries of the files and folders this run looked at (what no stage reads
        any more drops out)."""
        return {"files": {key: value for key, value in self.entries.items() if key in self.used},
                "folders": {key: self.folders[key].to_json() for key in sorted(self.used_folders)}}

    @classmethod
    def from_json(cls, document: Any) -> DigestCache:
        """What a state file holds; an entry that is not text, or a folder record that is not three texts, is left
        out. An entry's text is checked when its file is looked at."""
        if not isinstance(document, dict):
            return cls()
        files, folders = document.get("files"), document.get("folders")
        entries = {key: value for key, value in files.items() if isinstance(value, str)} if isinstance(
            files, dict) else {}
        records = {key: record for key, data in folders.items() if (record := FolderRecord.from_json(data))
                   is not None} if isinstance(folders, dict) else {}
        return cls(entries, records)


def _folder_record(listing: str, kept: list[tuple[str, str]]) -> FolderRecord:
    """A folder's record from its listing's digest and its files' entries (relative path, entry), in order: its
    digest is `digest_path`'s, of each file's relative path and digest."""
    digest = "dir:" + digest_pieces(BIN_DIGEST, (f"{relative}\0{entry.split(':')[3]}\n".encode(
        "utf-8", "surrogateescape") for relative, entry in kept))
    return FolderRecord(listing, digest, FolderRecord.pack(kept), settled=not any(_racy(entry) for _, entry in kept))


def _listing(folder: str) -> list[tuple[str, str]]:
    """Every file under `folder` as (relative path, ``size:mtime_ns:inode:``), in `digest_path`'s order: sorted by
    path parts, as pathlib orders paths (a flat folder's names sort as they are; below it "a/b" after "a.png")."""
    listed: list[tuple[str, str]] = []
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:  # an unreadable folder: rglob passes over it too
        return listed
    try:
        _list_into(fd, "", listed)
    finally:
        os.close(fd)
    if any("/" in relative for relative, _ in listed):
        listed.sort(key=lambda item: item[0].split("/"))
    else:
        listed.sort()  # by name (each once): the tuples compared as they are, with no key made a file
    return listed


def _list_into(fd: int, prefix: str, listed: list[tuple[str, str]]) -> None:
    """The files of the folder open as `fd` (a link to a file too; links to folders are not entered) added to
    `listed`, as ``prefix/name``, then its subfolders': what ``Path.rglob("*")`` and ``is_file()`` find. Each file
    is looked up by its name in the open folder (fstatat), not by its whole path: a folder of 50,000 images is
    50,000 of those on every re-run."""
    names: list[str] = []
    below: list[str] = []
    try:
        with os.scandir(fd) as entries:
            for entry in entries:
                try:
                    if entry.is_dir(follow_symlinks=False):
                        below.append(entry.name)
                    elif entry.is_file():
                        names.append(entry.name)
                except OSError:  # a link in a loop, or into a folder not readable: not a file, as for is_file()
                    continue
    except OSError:
        return
    stat = os.stat
    for name in names:
        try:
            status = stat(name, dir_fd=fd)
        except OSError:  # gone since it was listed
            continue
        listed.append((prefix + name, _named(status)))
    for name in below:
        try:
            inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
        except OSError:
            continue
        try:
            _list_into(inner, f"{prefix}{name}/", listed)
        finally:
            os.close(inner)


def digest_path(path: Path, cache: DigestCache | None = None) -> str:
    """The digest of a file; for a folder, of the sorted (relative path, digest) list of every file in it; a
    missing path digests to "" so that its later appearance counts as a change. With `cache`, a file unchanged
    since its recorded digest is not read."""
    path = Path(path)
    if path.is_file():
        return cache.digest(path) if cache is not None else digest_file(BIN_DIGEST, path)
    if path.is_dir():
        if cache is not None:
            return cache.folder_digest(str(path))
        found = [(relative, digest_file(BIN_DIGEST, os.path.join(path, relative))) for relative, _ in _listing(
            str(path))]
        # hashed line by line: the same bytes as the joined listing, never held whole (3.5 MB at 50,000 files)
        return "dir:" + digest_pieces(BIN_DIGEST, (f"{relative}\0{digest}\n".encode("utf-8", "surrogateescape")
                                                   for relative, digest in found))
    return ""


def digest_paths(paths: Iterable[Path], cache: DigestCache | None = None) -> dict[str, str]:
    return {str(Path(p)): digest_path(Path(p), cache) for p in paths}
