"""`infer freeze`: a model source -> OUTDIR/model.pb + OUTDIR/model.json, the contract later stages read."""

from __future__ import annotations

from typing import TYPE_CHECKING

from infer._exports import lazy_exports

if TYPE_CHECKING:
    from infer.freeze._freeze import CONTRACT_NAME, PB_NAME, FreezeReport, freeze_model
    from infer.freeze.options import FreezeOptions

__all__ = [
    "CONTRACT_NAME",
    "PB_NAME",
    "FreezeOptions",
    "FreezeReport",
    "freeze_model",
]

__getattr__, __dir__ = lazy_exports(__name__, {
    "CONTRACT_NAME": "infer.freeze._freeze",
    "FreezeOptions": "infer.freeze.options",
    "FreezeReport": "infer.freeze._freeze",
    "PB_NAME": "infer.freeze._freeze",
    "freeze_model": "infer.freeze._freeze",
})
