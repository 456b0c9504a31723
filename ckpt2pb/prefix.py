"""A checkpoint prefix: the folder and the name its files share (``model.ckpt`` of ``model.ckpt.index``).

`saver.save(session, "run_dir/")` writes ``run_dir/.index``, ``run_dir/.meta`` and ``run_dir/.data-*``: a prefix
whose name is empty. A `Path` cannot hold it (it drops the trailing '/', and ``Path(".meta").suffix`` is empty), so
a prefix is kept as its folder and its name, and spelt back with the '/' when the name is empty.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class CheckpointPrefix:
    folder: Path
    name: str  # "" for a prefix that ends in '/'

    @classmethod
    def from_text(cls, text: str) -> CheckpointPrefix:
        """``a/model.ckpt`` -> (a, model.ckpt); ``a/`` -> (a, "")."""
        head, _, tail = text.replace(os.sep, "/").rpartition("/")
        if not _:
            return cls(Path("."), text)
        return cls(Path(head or "/"), tail)

    def file(self, suffix: str) -> Path:
        """The checkpoint file with this suffix: ``.index``, ``.meta``, ``.data-00000-of-00001``."""
        return self.folder / f"{self.name}{suffix}"

    def resolve(self) -> CheckpointPrefix:
        return CheckpointPrefix(self.folder.resolve(), self.name)

    def __str__(self) -> str:
        return str(self.folder / self.name) if self.name else str(self.folder).rstrip(os.sep) + os.sep
