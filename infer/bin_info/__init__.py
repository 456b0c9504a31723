"""`infer bin-info`: what is in a .bin file or a dump-bin dataset, checked against its manifest."""

from __future__ import annotations

from typing import TYPE_CHECKING

from binio.exports import lazy_exports

if TYPE_CHECKING:  # the exports (binio/exports.py): type checkers read them here, lazy_exports on first use
    from infer.bin_info._bin_info import describe_path as describe_path
    from infer.bin_info.options import BinInfoOptions as BinInfoOptions
    from infer.bin_info.result import BinInfoReport as BinInfoReport

__getattr__, __dir__ = lazy_exports(__name__)
