"""`infer run`: one entry, `run_model`, which takes the plain path (one batch loop over a runner) or, asked for
shards, the sharded one (shards over devices or Ray). docs/architecture.md maps the modules."""

from __future__ import annotations

from typing import TYPE_CHECKING

from binio.exports import lazy_exports

if TYPE_CHECKING:  # the exports (binio/exports.py): type checkers read them here, lazy_exports on first use
    from infer.run._entry import run_model as run_model
    from infer.run._gear import GearOutputs as GearOutputs
    from infer.run._gear import gear_outputs as gear_outputs
    from infer.run._gear import tool_gear_flags as tool_gear_flags
    from infer.run._plain import BACKENDS as BACKENDS
    from infer.run._plan import plan_run as plan_run
    from infer.run._runners.msame import msame_argv as msame_argv
    from infer.run.options import RunError as RunError
    from infer.run.options import RunOptions as RunOptions
    from infer.run.options import ScaleOptions as ScaleOptions
    from infer.run.options import ScaleOutError as ScaleOutError
    from infer.run.result import RunPlan as RunPlan
    from infer.run.result import RunResult as RunResult

__getattr__, __dir__ = lazy_exports(__name__)
