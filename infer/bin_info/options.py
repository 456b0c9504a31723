"""What `infer bin-info` is asked (`BinInfoOptions`): the one declaration of its flags."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from infer._option_fields import setting


@dataclass(frozen=True)
class BinInfoOptions:
    verify: bool = setting(False, toml=False, help="Re-check every file's size and digest.")
    to_npy: Path | None = setting(None, toml=False, help="Export: one .npy (a file) or a folder of them.")
    dtype: str | None = setting(None, toml=False, help="For a bare .bin with no dataset.json.")
    shape: str | None = setting(None, toml=False, help="For a bare .bin: e.g. 1,224,224,3.")
    per_file: bool = setting(False, toml=False, help="One line per file, not one per input.")
    force: bool = setting(False, toml=False, help="Overwrite what --to-npy names.")
    om: Path | None = setting(None, toml=False, help="For an NPU dump: the om whose origin formats and shapes turn "
                                                     "its layouts back (default: the dump's own, where it has them).")
