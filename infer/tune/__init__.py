"""`infer tune-precision`: the ops to keep in fp32 so that compare passes under an fp16 precision mode."""

from __future__ import annotations

from typing import TYPE_CHECKING

from infer._exports import lazy_exports

if TYPE_CHECKING:
    from infer.tune._tune import tune_precision
    from infer.tune.errors import TuneError
    from infer.tune.options import TuneOptions
    from infer.tune.result import TuneResult

__all__ = [
    "TuneError", "TuneOptions", "TuneResult", "tune_precision",
]

__getattr__, __dir__ = lazy_exports(__name__, {
    "TuneError": "infer.tune.errors",
    "TuneOptions": "infer.tune.options",
    "TuneResult": "infer.tune.result",
    "tune_precision": "infer.tune._tune",
})
