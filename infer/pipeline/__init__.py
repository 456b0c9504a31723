"""`infer pipeline`: every stage from one TOML file, re-runs skipping what has not changed."""

from __future__ import annotations

from typing import TYPE_CHECKING

from infer._exports import lazy_exports

if TYPE_CHECKING:
    from infer.pipeline._runner import PipelineResult, StageOutcome, report_tail, run_pipeline, tune_inputs
    from infer.pipeline._template import TemplateValues, values_from_model, write_template
    from infer.pipeline.config import PipelineConfig, load_config

__all__ = [
    "PipelineConfig", "PipelineResult", "StageOutcome", "TemplateValues", "load_config", "report_tail",
    "run_pipeline", "tune_inputs", "values_from_model", "write_template",
]

__getattr__, __dir__ = lazy_exports(__name__, {
    "PipelineConfig": "infer.pipeline.config",
    "PipelineResult": "infer.pipeline._runner",
    "StageOutcome": "infer.pipeline._runner",
    "TemplateValues": "infer.pipeline._template",
    "load_config": "infer.pipeline.config",
    "report_tail": "infer.pipeline._runner",
    "run_pipeline": "infer.pipeline._runner",
    "tune_inputs": "infer.pipeline._runner",
    "values_from_model": "infer.pipeline._template",
    "write_template": "infer.pipeline._template",
})
