"""`infer bin-info`: what is in a .bin file or a dump-bin dataset, checked against its manifest."""

from __future__ import annotations

from typing import TYPE_CHECKING

from infer._exports import lazy_exports

if TYPE_CHECKING:
    from infer.bin_info._bin_info import describe_path
    from infer.bin_info.options import BinInfoOptions
    from infer.bin_info.result import BinInfoReport

__all__ = [
    "BinInfoOptions", "BinInfoReport", "describe_path",
]

__getattr__, __dir__ = lazy_exports(__name__, {
    "BinInfoOptions": "infer.bin_info.options",
    "BinInfoReport": "infer.bin_info.result",
    "describe_path": "infer.bin_info._bin_info",
})
