"""`infer dump-bin`: datasets in (npy/npz, images, bins, generators), .bin files and dataset.json out."""

from __future__ import annotations

from typing import TYPE_CHECKING

from infer._exports import lazy_exports

if TYPE_CHECKING:
    from infer.dump_bin._dump import DumpResult, InputDump, LossyCastError, dump_bins
    from infer.dump_bin._sources.arrays import SourceError
    from infer.dump_bin.options import DumpOptions
    from infer.preprocessing import ImageOptions

__all__ = [
    "DumpOptions", "DumpResult", "ImageOptions", "InputDump", "LossyCastError", "SourceError", "dump_bins",
]

__getattr__, __dir__ = lazy_exports(__name__, {
    "DumpOptions": "infer.dump_bin.options",
    "DumpResult": "infer.dump_bin._dump",
    "ImageOptions": "infer.preprocessing",
    "InputDump": "infer.dump_bin._dump",
    "LossyCastError": "infer.dump_bin._dump",
    "SourceError": "infer.dump_bin._sources.arrays",
    "dump_bins": "infer.dump_bin._dump",
})
