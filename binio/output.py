"""The one check every writer makes of its output: what exists already is replaced only with --force, and --force
never deletes or overwrites through a link that leads out of the output folder."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from binio.errors import OutputExistsError

LOCK_NAME = ".infer.lock"  # the advisory lock of a folder being written (binio.lock); not an output


def is_empty_folder(folder: Path) -> bool:
    """Whether `folder` holds nothing but the lock of the writer now holding it."""
    with os.scandir(folder) as entries:
        return all(entry.name == LOCK_NAME for entry in entries)


@contextlib.contextmanager
def removed_if_left_empty(folder: Path) -> Iterator[None]:
    """Removes `folder` when the body fails and leaves it empty, if it did not exist before: a refusal leaves
    nothing, not even the folder its first write made."""
    existed = os.path.lexists(folder)
    try:
        yield
    except BaseException:
        if not existed:
            with contextlib.suppress(OSError):  # not empty, or not ours to remove: left as it is
                Path(folder).rmdir()
        raise


def check_output(path: Path, *, force: bool, hint: str = "pass --force to overwrite it", what: str = "") -> bool:
    """Refuses an existing `path` (a file, or a folder holding anything) unless `force`; with `force`, refuses a
    folder holding a link out of it. Returns whether `path` exists (an empty folder does not count). `what` says
    in the refusal what wrote it (e.g. "an earlier tune-precision")."""
    path = Path(path)
    if not os.path.lexists(path) or (path.is_dir() and is_empty_folder(path)):
        return False
    if not force:
        raise OutputExistsError(f"{path}: exists already" + (f" ({what})" if what else ""), hint=hint)
    if path.is_symlink():
        check_link_inside(path, path.parent)
    if path.is_dir():
        check_no_links_out(path)
    return True


def check_link_inside(link: Path, folder: Path) -> None:
    """Refuses the link `link` when it leads out of `folder` (or nowhere): --force never writes or deletes through
    it, as it never does through a link in an output folder."""
    target = Path(os.path.realpath(link))
    root = Path(folder).resolve()
    if not target.is_relative_to(root) or not os.path.exists(link):
        raise OutputExistsError(f"{link}: a link to {target}, outside the output folder {root}; --force never "
                                "writes or deletes through it", hint="remove the link, or choose another output")


def check_no_links_out(folder: Path) -> None:
    """Refuses a folder in which a link (at any depth) points outside it: writing or deleting through that link
    would change files the user never named as output."""
    root = Path(folder).resolve()
    for parent, folders, files in os.walk(folder):  # links to folders are listed, never walked into
        for name in (*folders, *files):
            link = Path(parent) / name
            if not link.is_symlink():
                continue
            target = Path(os.path.realpath(link))
            if not target.is_relative_to(root):
                raise OutputExistsError(
                    f"{link}: a link to {target}, outside the output folder {folder}; --force never writes or "
                    "deletes through it", hint="remove the link, or choose another output folder")
