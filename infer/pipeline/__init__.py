"""`infer pipeline`: every stage from one TOML file, re-runs skipping what has not changed."""

from __future__ import annotations

from typing import TYPE_CHECKING

from binio.exports import lazy_exports

if TYPE_CHECKING:  # the exports (binio/exports.py): type checkers read them here, lazy_exports on first use
    from infer.pipeline._runner import PipelineResult as PipelineResult
    from infer.pipeline._runner import StageOutcome as StageOutcome
    from infer.pipeline._runner import report_tail as report_tail
    from infer.pipeline._runner import run_pipeline as run_pipeline
    from infer.pipeline._runner import tune_inputs as tune_inputs
    from infer.pipeline._template import TemplateValues as TemplateValues
    from infer.pipeline._template import values_from_model as values_from_model
    from infer.pipeline._template import write_template as write_template
    from infer.pipeline.config import PipelineConfig as PipelineConfig
    from infer.pipeline.config import load_config as load_config

__getattr__, __dir__ = lazy_exports(__name__)
