"""AIPP, shared by convert (the config ATC takes), dump-bin (uint8 images), run and compare (the declared
preprocessing): the user's choices, the config made from them, and what model.json records."""

from __future__ import annotations

from typing import TYPE_CHECKING

from infer._exports import lazy_exports

if TYPE_CHECKING:
    from infer.model_aipp.config import AIPP_FILE, aipp_config_for, aipp_record, model_aipp
    from infer.model_aipp.declared import DeclaredPreprocessing
    from infer.model_aipp.options import AippOptions

__all__ = [
    "AIPP_FILE", "AippOptions", "DeclaredPreprocessing", "aipp_config_for", "aipp_record", "model_aipp",
]

__getattr__, __dir__ = lazy_exports(__name__, {
    "AIPP_FILE": "infer.model_aipp.config",
    "AippOptions": "infer.model_aipp.options",
    "DeclaredPreprocessing": "infer.model_aipp.declared",
    "aipp_config_for": "infer.model_aipp.config",
    "aipp_record": "infer.model_aipp.config",
    "model_aipp": "infer.model_aipp.config",
})
