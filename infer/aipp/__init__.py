"""AIPP, shared by convert (the config ATC takes), dump-bin (uint8 images), run and compare (the declared
preprocessing): the user's choices, the config made from them, and what model.json records."""

from __future__ import annotations

from typing import TYPE_CHECKING

from infer._exports import lazy_exports

if TYPE_CHECKING:
    from infer.aipp.config import AIPP_FILE, aipp_config_for, aipp_record, model_aipp
    from infer.aipp.declared import DeclaredPreprocessing
    from infer.aipp.options import AippOptions

__all__ = [
    "AIPP_FILE", "AippOptions", "DeclaredPreprocessing", "aipp_config_for", "aipp_record", "model_aipp",
]

__getattr__, __dir__ = lazy_exports(__name__, {
    "AIPP_FILE": "infer.aipp.config",
    "AippOptions": "infer.aipp.options",
    "DeclaredPreprocessing": "infer.aipp.declared",
    "aipp_config_for": "infer.aipp.config",
    "aipp_record": "infer.aipp.config",
    "model_aipp": "infer.aipp.config",
})
