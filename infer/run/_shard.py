"""Which batches of a run folder are done, for a resumed sharded run (the shards themselves and the workers'
views of the dataset are `binio.shards`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from binio.binfile import check_bin_size
from binio.errors import InferError
from binio.spec import TensorSpec
from infer.run.layout import output_file_name


def finished_stems(folder: Path, stems: Sequence[str], outputs: tuple[TensorSpec, ...]) -> tuple[str, ...]:
    """The stems whose every output file is in `folder` with the size its spec gives (for a resumed run)."""
    if not outputs or not all(spec.is_static for spec in outputs):
        return ()
    done = []
    for stem in stems:
        try:
            for index, spec in enumerate(outputs):
                check_bin_size(folder / output_file_name(stem, index), spec)
        except (InferError, OSError):
            continue
        done.append(stem)
    return tuple(done)
