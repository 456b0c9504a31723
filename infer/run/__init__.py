"""`infer run`: one entry, `run_model`, which takes the plain path (one batch loop over a runner) or, asked for
shards, the sharded one (shards over devices or Ray). docs/architecture.md maps the modules."""

from __future__ import annotations

from typing import TYPE_CHECKING

from infer._exports import lazy_exports

if TYPE_CHECKING:
    from infer.run._entry import run_model
    from infer.run._gear import GearOutputs, gear_outputs, tool_gear_flags
    from infer.run._plain import BACKENDS
    from infer.run._plan import plan_run
    from infer.run._runners.msame import msame_argv
    from infer.run.options import RunError, RunOptions, ScaleOptions, ScaleOutError
    from infer.run.result import RunPlan, RunResult

__all__ = [
    "BACKENDS", "GearOutputs", "RunError", "RunOptions", "RunPlan", "RunResult", "ScaleOptions", "ScaleOutError",
    "gear_outputs", "msame_argv", "plan_run", "run_model", "tool_gear_flags",
]

__getattr__, __dir__ = lazy_exports(__name__, {
    "BACKENDS": "infer.run._plain",
    "GearOutputs": "infer.run._gear",
    "RunError": "infer.run.options",
    "RunOptions": "infer.run.options",
    "RunPlan": "infer.run.result",
    "RunResult": "infer.run.result",
    "ScaleOptions": "infer.run.options",
    "ScaleOutError": "infer.run.options",
    "gear_outputs": "infer.run._gear",
    "msame_argv": "infer.run._runners.msame",
    "plan_run": "infer.run._plan",
    "run_model": "infer.run._entry",
    "tool_gear_flags": "infer.run._gear",
})
