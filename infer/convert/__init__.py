"""`infer convert`: the frozen pb of a contract -> an Ascend .om through ATC, or the ONNX Runtime stand-in."""

from __future__ import annotations

from typing import TYPE_CHECKING

from infer._exports import lazy_exports

if TYPE_CHECKING:
    from infer.convert._convert import convert_model
    from infer.convert._plan import choose_target
    from infer.convert.errors import ConvertError
    from infer.convert.options import TARGETS, ConvertOptions
    from infer.convert.result import ConvertResult

__all__ = [
    "TARGETS", "ConvertError", "ConvertOptions", "ConvertResult", "choose_target", "convert_model",
]

__getattr__, __dir__ = lazy_exports(__name__, {
    "ConvertError": "infer.convert.errors",
    "ConvertOptions": "infer.convert.options",
    "ConvertResult": "infer.convert.result",
    "TARGETS": "infer.convert.options",
    "choose_target": "infer.convert._plan",
    "convert_model": "infer.convert._convert",
})
