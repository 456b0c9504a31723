"""`infer dump-bin`: datasets in (npy/npz, images, bins, generators), .bin files and dataset.json out."""

from __future__ import annotations

from typing import TYPE_CHECKING

from binio.exports import lazy_exports

if TYPE_CHECKING:  # the exports (binio/exports.py): type checkers read them here, lazy_exports on first use
    from infer.dump_bin._dump import dump_bins as dump_bins
    from infer.dump_bin._sources.open import refuse_unused_preprocessing as refuse_unused_preprocessing
    from infer.dump_bin.errors import LossyCastError as LossyCastError
    from infer.dump_bin.errors import SourceError as SourceError
    from infer.dump_bin.options import DumpOptions as DumpOptions
    from infer.dump_bin.result import DumpResult as DumpResult
    from infer.dump_bin.result import InputDump as InputDump
    from infer.preprocessing import ImageOptions as ImageOptions

__getattr__, __dir__ = lazy_exports(__name__)
