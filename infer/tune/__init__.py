"""`infer tune-precision`: the ops to keep in fp32 so that compare passes under an fp16 precision mode."""

from __future__ import annotations

from typing import TYPE_CHECKING

from binio.exports import lazy_exports

if TYPE_CHECKING:  # the exports (binio/exports.py): type checkers read them here, lazy_exports on first use
    from infer.tune._tune import tune_precision as tune_precision
    from infer.tune.errors import TuneError as TuneError
    from infer.tune.options import TuneOptions as TuneOptions
    from infer.tune.result import TuneResult as TuneResult

__getattr__, __dir__ = lazy_exports(__name__)
