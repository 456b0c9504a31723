"""AIPP, shared by convert (the config ATC takes), dump-bin (uint8 images), run and compare (the declared
preprocessing): the user's choices, the config made from them, and what model.json records."""

from __future__ import annotations

from typing import TYPE_CHECKING

from binio.exports import lazy_exports

if TYPE_CHECKING:  # the exports (binio/exports.py): type checkers read them here, lazy_exports on first use
    from infer.model_aipp.config import AIPP_FILE as AIPP_FILE
    from infer.model_aipp.config import aipp_config_for as aipp_config_for
    from infer.model_aipp.config import aipp_record as aipp_record
    from infer.model_aipp.config import model_aipp as model_aipp
    from infer.model_aipp.declared import DeclaredPreprocessing as DeclaredPreprocessing
    from infer.model_aipp.options import AippOptions as AippOptions


__getattr__, __dir__ = lazy_exports(__name__)
