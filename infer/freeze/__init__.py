"""`infer freeze`: a model source -> OUTDIR/model.pb + OUTDIR/model.json, the contract later stages read."""

from __future__ import annotations

from typing import TYPE_CHECKING

from binio.exports import lazy_exports

if TYPE_CHECKING:  # the exports (binio/exports.py): type checkers read them here, lazy_exports on first use
    from infer.freeze._freeze import CONTRACT_NAME as CONTRACT_NAME
    from infer.freeze._freeze import PB_NAME as PB_NAME
    from infer.freeze._freeze import FreezeReport as FreezeReport
    from infer.freeze._freeze import freeze_model as freeze_model
    from infer.freeze.options import FreezeOptions as FreezeOptions

__getattr__, __dir__ = lazy_exports(__name__)
