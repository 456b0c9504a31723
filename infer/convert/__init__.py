"""`infer convert`: the frozen pb of a contract -> an Ascend .om through ATC, or the ONNX Runtime stand-in."""

from __future__ import annotations

from typing import TYPE_CHECKING

from infer._exports import lazy_exports

if TYPE_CHECKING:
    from atc_wrap.errors import ConvertError
    from infer.convert._convert import ConvertOptions, ConvertResult, choose_target, convert_model

__all__ = [
    "ConvertError", "ConvertOptions", "ConvertResult", "choose_target", "convert_model",
]

__getattr__, __dir__ = lazy_exports(__name__, {
    "ConvertError": "atc_wrap.errors",
    "ConvertOptions": "infer.convert._convert",
    "ConvertResult": "infer.convert._convert",
    "choose_target": "infer.convert._convert",
    "convert_model": "infer.convert._convert",
})
