"""The digests the pipeline keeps between runs (`infer.pipeline._digests`): a file or folder unchanged since its
digest was taken is not read again, a changed one always is, and an unchanged folder is decided from its listing
alone (issue 42: a re-run with nothing to do, at 50,000 images, under a second)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

import infer.pipeline._digests as digests
from binio.atomic import write_json_atomic
from infer.pipeline._digests import DigestCache, FolderRecord, digest_path


def test_digest_of_a_folder_follows_names_and_contents(tmp_path: Path) -> None:
    folder = tmp_path / "images"
    folder.mkdir()
    (folder / "a.png").write_bytes(b"1")
    first = digest_path(folder)
    (folder / "a.png").write_bytes(b"2")
    second = digest_path(folder)
    (folder / "a.png").rename(folder / "b.png")
    third = digest_path(folder)
    assert len({first, second, third}) == 3
    assert digest_path(tmp_path / "absent") == ""


def test_digests_recorded_are_trusted_while_a_file_keeps_its_size_time_and_inode(tmp_path: Path) -> None:
    """Issue 42: a re-run with nothing to do decides from the digests it recorded (make's and dvc's rule), not by
    reading every file again: a folder of many files is read once, then only what changed, and a file changed
    within the clock's reach of its digest (same size, maybe the same time) is read until its time is older."""
    folder = tmp_path / "images"
    folder.mkdir()
    old = time.time() - 60
    for index in range(200):
        (folder / f"{index:04d}.png").write_bytes(bytes([index % 256]) * 64)
        os.utime(folder / f"{index:04d}.png", (old, old))
    cache = DigestCache()
    first = digest_path(folder, cache)
    assert cache.read == 200 and first == digest_path(folder)  # the same digest a run without records takes
    again = DigestCache.from_json(json.loads(json.dumps(cache.to_json())))  # as the state file keeps it
    assert digest_path(folder, again) == first and again.read == 0
    changed = folder / "0007.png"
    changed.write_bytes(b"\xff" * 64)  # same size, new bytes, a time of now
    second = digest_path(folder, again)
    assert second != first and second == digest_path(folder) and again.read == 1
    assert digest_path(folder, again) == second and again.read == 2  # too recent to trust: read once more
    os.utime(changed, (old, old))
    assert digest_path(folder, again) == second and again.read == 3  # its time changed: read, then trusted
    assert digest_path(folder, again) == second and again.read == 3


def test_a_state_files_recorded_digests_that_are_not_what_it_writes_make_their_files_be_read(tmp_path: Path) -> None:
    """An entry is checked when its file is looked at: one that is not what the cache writes (fields missing, not
    whole numbers, not text) or that names another size, time or inode is not trusted, and the file is read."""
    path = tmp_path / "a.png"
    path.write_bytes(b"x" * 64)
    old = time.time_ns() - 60_000_000_000
    os.utime(path, ns=(old, old))
    status = os.stat(path)
    named = f"{status.st_size}:{status.st_mtime_ns}:{status.st_ino}"
    good = f"{named}:{'ab' * 16}:{time.time_ns()}"
    assert DigestCache.from_json({"files": {str(path): good}}).digest(path) == "ab" * 16  # trusted, not read
    for bad in (f"{named}:{'ab' * 16}", f"{named}::{time.time_ns()}", f"{named}:{'ab' * 16}:x",
                f"{named}:{'ab' * 16}:1.5", f"{named}:{'ab' * 16}:{old}", f"1{named}:{'ab' * 16}:{time.time_ns()}",
                f"{named}:{'AB' * 16}:{time.time_ns()}", f"{named}:a\0b:{time.time_ns()}",
                f"{named}:{'ab' * 16}:{'9' * 5000}", ["x"], None, 7):
        cache = DigestCache.from_json({"files": {str(path): bad}})
        assert cache.digest(path) == digest_path(path) and cache.read == 1, bad
    assert DigestCache.from_json([good]).entries == {} == DigestCache.from_json({"files": [good]}).entries


def test_a_folders_digest_is_the_one_a_walk_with_pathlib_takes(tmp_path: Path) -> None:
    """The listing is made with os.scandir; what it lists, in which order, is what Path.rglob and is_file give
    (hidden files, a link to a file; not a link to a folder), so digests recorded before stay valid."""
    from binio.digest import BIN_DIGEST, digest_bytes, digest_file

    for relative in ("a/b.png", "a-c.png", "a.png", "z/.hidden", "A/x", "a/b/c/d.txt"):
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(relative)
    (tmp_path / "link.png").symlink_to(tmp_path / "a.png")
    (tmp_path / "linked").symlink_to(tmp_path / "a")
    (tmp_path / "loop1").symlink_to(tmp_path / "loop2")  # a link in a loop: not a file, and the rest still listed
    (tmp_path / "loop2").symlink_to(tmp_path / "loop1")
    by_pathlib = "".join(f"{item.relative_to(tmp_path).as_posix()}\0{digest_file(BIN_DIGEST, item)}\n"
                         for item in sorted(p for p in tmp_path.rglob("*") if p.is_file()))
    assert digest_path(tmp_path) == "dir:" + digest_bytes(BIN_DIGEST, by_pathlib.encode())
    assert digest_path(tmp_path, DigestCache()) == digest_path(tmp_path)


def test_a_digest_taken_too_soon_after_a_change_is_taken_again_when_the_state_is_saved(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 42: the first re-run after a run read again every file a stage wrote in the last RACY_NS before its
    digest was taken (100 MB at 50,000 images). Saving the state takes such a digest again once the change is older
    than RACY_NS, so the re-run reads nothing; a file changed since is left for the next run to read."""
    monkeypatch.setattr(digests, "RACY_NS", 300_000_000)
    written, changed = tmp_path / "written.bin", tmp_path / "changed.bin"
    written.write_bytes(b"\x01" * 64)
    changed.write_bytes(b"\x02" * 64)
    cache = DigestCache()
    digest = cache.digest(written)
    cache.digest(changed)
    cache.settle()
    assert cache.read == 2  # too recent: nothing taken again yet
    time.sleep(0.4)
    changed.write_bytes(b"\x03" * 65)
    cache.settle()
    assert cache.read == 3  # the file written, not the file changed since
    again = DigestCache.from_json(json.loads(json.dumps(cache.to_json())))
    assert again.digest(written) == digest and again.read == 0
    assert again.digest(changed) == digest_path(changed) and again.read == 1


def _aged_folder(folder: Path, count: int) -> Path:
    """`count` files of different bytes, their times a minute old (digests taken now are trusted at once)."""
    folder.mkdir()
    old = time.time() - 60
    for index in range(count):
        path = folder / f"{index:04d}.png"
        path.write_bytes(index.to_bytes(2, "big") * 32)
        os.utime(path, (old, old))
    return folder


def _written_just_now(folder: Path, count: int, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`count` files of different bytes written now, RACY_NS made 0.3 s: their digests are too recent to trust
    until 0.3 s have passed (a test waits that, not the 2 s of the real rule)."""
    monkeypatch.setattr(digests, "RACY_NS", 300_000_000)
    folder.mkdir()
    for index in range(count):
        (folder / f"{index:06d}.bin").write_bytes(bytes([index]) * 16)
    return folder


def _as_saved(cache: DigestCache) -> DigestCache:
    """The cache as the next run loads it from the state file."""
    return DigestCache.from_json(json.loads(json.dumps(cache.to_json())))


def _unpacked(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Records the folder records whose file entries are unpacked."""
    unpacked: list[str] = []
    entries = FolderRecord.entries

    def counted(record: FolderRecord) -> dict[str, str]:
        unpacked.append(record.digest)
        return entries(record)

    monkeypatch.setattr(FolderRecord, "entries", counted)
    return unpacked


def test_an_unchanged_folder_is_decided_from_its_listing_alone(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 42: the re-run compares one digest of the folder's listing (names, sizes, times, inodes) with the one
    recorded; the files' entries are unpacked, and the changed files read, only when it differs. The state keeps
    the folder as one record, not an entry per file under its absolute path."""
    folder = _aged_folder(tmp_path / "images", 300)
    cache = DigestCache()
    first = digest_path(folder, cache)
    assert cache.read == 300 and first == digest_path(folder)
    saved = cache.to_json()
    assert saved["files"] == {} and list(saved["folders"]) == [str(folder)]
    unpacked = _unpacked(monkeypatch)
    again = _as_saved(cache)
    assert digest_path(folder, again) == first and again.read == 0 and unpacked == [] and not again.changed
    # same size and time, another inode (a file put in its place): the listing differs, that file alone is read
    replaced = folder / "0042.png"
    status = replaced.stat()
    (folder / "new").write_bytes(b"\x07" * status.st_size)
    os.utime(folder / "new", ns=(status.st_atime_ns, status.st_mtime_ns))
    os.replace(folder / "new", replaced)
    second = digest_path(folder, again)
    assert second != first and second == digest_path(folder) and again.read == 1 and len(unpacked) == 1
    assert again.changed  # the record made again is saved
    third = _as_saved(again)
    assert digest_path(folder, third) == second and third.read == 0 and len(unpacked) == 1
    (folder / "0007.png").unlink()  # a file gone: a new listing, nothing to read
    assert digest_path(folder, third) == digest_path(folder) and third.read == 0 and len(unpacked) == 2


def test_a_state_file_that_kept_a_folders_files_one_by_one_spares_their_reads(tmp_path: Path) -> None:
    """A state file written before folders had records (each file's entry under its absolute path) still spares
    the first re-run every read; that run keeps the folder as one record."""
    folder = _aged_folder(tmp_path / "images", 50)
    cache = DigestCache()
    digest = digest_path(folder, cache)
    record = cache.folders[str(folder)]
    older = {"files": {os.path.join(folder, relative): entry for relative, entry in record.entries().items()}}
    again = DigestCache.from_json(json.loads(json.dumps(older)))
    assert digest_path(folder, again) == digest and again.read == 0 and again.changed
    assert list(again.to_json()["folders"]) == [str(folder)] and again.to_json()["files"] == {}


def test_a_folders_digests_taken_too_soon_are_settled_when_the_state_is_saved(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A folder whose files were written just before their digests (dump-bin's bins, run's outputs) is recorded
    without its listing until saving the state has taken those digests again, their change then older than
    RACY_NS: the first re-run reads nothing and unpacks nothing."""
    folder = _written_just_now(tmp_path / "bins", 20, monkeypatch)
    cache = DigestCache()
    digest = digest_path(folder, cache)
    cache.settle()
    assert cache.read == 20 and cache.to_json()["folders"][str(folder)]["listing"] == ""  # too recent yet
    time.sleep(0.4)
    cache.settle()
    assert cache.read == 40 and cache.to_json()["folders"][str(folder)]["listing"] != ""
    unpacked = _unpacked(monkeypatch)
    again = _as_saved(cache)
    assert digest_path(folder, again) == digest and again.read == 0 and unpacked == []


def test_folder_records_that_are_not_what_the_cache_writes_make_their_files_be_read(tmp_path: Path) -> None:
    """A folder record from a state file is checked as it is used: one that is not three texts is left out, and
    a packing that does not pair names with entries, or entries that do not name their files, make the files be
    read. None of it raises."""
    folder = _aged_folder(tmp_path / "images", 4)
    cache = DigestCache()
    digest = digest_path(folder, cache)
    good = cache.to_json()["folders"][str(folder)]
    bad: object
    for bad in (None, [], "x", {**good, "files": 7}, {"listing": good["listing"], "digest": digest}):
        again = DigestCache.from_json({"folders": {str(folder): bad}})
        assert again.folders == {} and digest_path(folder, again) == digest and again.read == 4, bad
    for files in ("", "0000.png", good["files"] + "\0extra", good["files"].replace(":", ";")):
        again = DigestCache.from_json({"folders": {str(folder): {**good, "listing": "", "files": files}}})
        assert digest_path(folder, again) == digest and again.read == 4, files
    assert DigestCache.from_json({"folders": [good]}).folders == {}


def test_a_file_name_that_is_not_utf8_is_digested_and_kept(tmp_path: Path) -> None:
    """A name of bytes that are not UTF-8 (listed as surrogate escapes) is hashed as its bytes, and its entry
    goes through the state file and back: no traceback, nothing read on the re-run."""
    folder = tmp_path / "images"
    folder.mkdir()
    try:
        (Path(os.fsdecode(bytes(folder) + b"/\xff.png"))).write_bytes(b"x")
    except (OSError, UnicodeError):
        pytest.skip("this file system takes UTF-8 names only")
    (folder / "a.png").write_bytes(b"y")
    old = time.time() - 60
    for entry in os.scandir(folder):
        os.utime(entry.path, (old, old))
    cache = DigestCache()
    digest = digest_path(folder, cache)
    assert digest == digest_path(folder) != "" and cache.read == 2
    write_json_atomic(tmp_path / "state.json", cache.to_json())
    again = DigestCache.from_json(json.loads((tmp_path / "state.json").read_text()))
    assert digest_path(folder, again) == digest and again.read == 0


def test_a_file_rewritten_in_place_before_its_folder_is_settled_changes_the_folders_digest(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the racy rule is for: a file rewritten within the clock's reach of its digest, keeping its size, time
    and inode. Settling the folder takes that file's digest again, and the folder's digest is made again from it:
    the next run sees the change (the stage that read the folder runs again), not the digest from before."""
    folder = _written_just_now(tmp_path / "images", 5, monkeypatch)
    cache = DigestCache()
    first = digest_path(folder, cache)
    rewritten = folder / "000003.bin"
    status = rewritten.stat()
    with open(rewritten, "r+b") as handle:  # in place: the same inode and size
        handle.write(b"\xff" * 16)
    os.utime(rewritten, ns=(status.st_atime_ns, status.st_mtime_ns))
    assert (rewritten.stat().st_ino, rewritten.stat().st_mtime_ns) == (status.st_ino, status.st_mtime_ns)
    time.sleep(0.4)
    cache.settle()
    again = _as_saved(cache)
    assert digest_path(folder, again) == digest_path(folder) != first
