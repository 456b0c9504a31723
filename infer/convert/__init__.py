"""`infer convert`: the frozen pb of a contract -> an Ascend .om through ATC, or the ONNX Runtime stand-in."""

from __future__ import annotations

from typing import TYPE_CHECKING

from binio.exports import lazy_exports

if TYPE_CHECKING:  # the exports (binio/exports.py): type checkers read them here, lazy_exports on first use
    from infer.convert._convert import convert_model as convert_model
    from infer.convert._plan import choose_target as choose_target
    from infer.convert.errors import ConvertError as ConvertError
    from infer.convert.options import TARGETS as TARGETS
    from infer.convert.options import ConvertOptions as ConvertOptions
    from infer.convert.result import ConvertResult as ConvertResult


__getattr__, __dir__ = lazy_exports(__name__)
