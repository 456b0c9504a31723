"""`infer dump-bin`: datasets in (npy/npz, images, bins, generators), .bin files and dataset.json out."""

from __future__ import annotations

from typing import TYPE_CHECKING

from infer._exports import lazy_exports

if TYPE_CHECKING:
    from infer.dump_bin._dump import dump_bins
    from infer.dump_bin._sources.open import refuse_unused_preprocessing
    from infer.dump_bin.errors import LossyCastError, SourceError
    from infer.dump_bin.options import DumpOptions
    from infer.dump_bin.result import DumpResult, InputDump
    from infer.preprocessing import ImageOptions

__all__ = [
    "DumpOptions", "DumpResult", "ImageOptions", "InputDump", "LossyCastError", "SourceError", "dump_bins",
    "refuse_unused_preprocessing",
]

__getattr__, __dir__ = lazy_exports(__name__, {
    "DumpOptions": "infer.dump_bin.options",
    "DumpResult": "infer.dump_bin.result",
    "ImageOptions": "infer.preprocessing",
    "InputDump": "infer.dump_bin.result",
    "LossyCastError": "infer.dump_bin.errors",
    "SourceError": "infer.dump_bin.errors",
    "dump_bins": "infer.dump_bin._dump",
    "refuse_unused_preprocessing": "infer.dump_bin._sources.open",
})
