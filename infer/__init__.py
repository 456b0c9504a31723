"""The top layer: model contract, runners, comparison, reports and the `infer` command line.

The Python API is what this package exports (``__all__``): one function per stage, its options and its result,
the model contract and the one error root. Each name is imported the first time it is used, so ``import infer``
(and ``infer --help``) stays fast and imports no framework::

    import infer

    frozen = infer.freeze_model("ckpt/model.ckpt", "model", ["probs:0"], batch=8, assignments={"is_training": False})
    converted = infer.convert_model(frozen.contract, infer.ConvertOptions(soc_version="Ascend310"))
    ...

Every stage after freeze takes the contract as a `ModelContract` or as the path of its model.json.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# Exported name -> (module, name there). Kept equal to the TYPE_CHECKING imports below by tests/test_api.py.
_EXPORTS: dict[str, tuple[str, str]] = {
    "InferError": ("binio.errors", "InferError"),
    "ModelContract": ("infer.contract", "ModelContract"),
    "load_contract": ("infer.contract", "load_contract"),
    "DatasetManifest": ("binio.manifest", "DatasetManifest"),
    "load_manifest": ("binio.manifest", "load_manifest"),
    "GraphReport": ("ckpt2pb.inspection", "GraphReport"),
    "inspect_model": ("ckpt2pb.inspection", "inspect_model"),
    "FreezeReport": ("infer.freeze", "FreezeReport"),
    "InputRequest": ("ckpt2pb.inputs", "InputRequest"),
    "freeze_model": ("infer.freeze", "freeze_model"),
    "AippOptions": ("infer.data.aipp", "AippOptions"),
    "ConvertOptions": ("infer.convert", "ConvertOptions"),
    "ConvertResult": ("infer.convert", "ConvertResult"),
    "convert_model": ("infer.convert", "convert_model"),
    "DumpOptions": ("infer.data.options", "DumpOptions"),
    "DumpResult": ("infer.data.dump", "DumpResult"),
    "ImageOptions": ("infer.data.options", "ImageOptions"),
    "dump_bins": ("infer.data.dump", "dump_bins"),
    "BinInfoReport": ("infer.data.bininfo", "BinInfoReport"),
    "describe_path": ("infer.data.bininfo", "describe_path"),
    "RunOptions": ("infer.run.options", "RunOptions"),
    "RunResult": ("infer.run.plain", "RunResult"),
    # `infer.run` is run's package, so its one entry (plain or sharded, as ScaleOptions ask) has a name of its own.
    "run_inference": ("infer.run.entry", "run"),
    "run_model": ("infer.run.plain", "run_model"),
    "ScaleOptions": ("infer.run.options", "ScaleOptions"),
    "run_sharded": ("infer.run.sharded", "run_sharded"),
    "CompareOptions": ("infer.compare.options", "CompareOptions"),
    "CompareResult": ("infer.compare.result", "CompareResult"),
    "Thresholds": ("infer.compare.thresholds", "Thresholds"),
    # `infer.compare` is the comparison's package, so the stage's function is exported under a name of its own.
    "compare_outputs": ("infer.compare.compare", "compare"),
    "PipelineConfig": ("infer.pipeline.config", "PipelineConfig"),
    "PipelineResult": ("infer.pipeline.runner", "PipelineResult"),
    "load_config": ("infer.pipeline.config", "load_config"),
    "run_pipeline": ("infer.pipeline.runner", "run_pipeline"),
    "TuneOptions": ("infer.tune.tune", "TuneOptions"),
    "TuneResult": ("infer.tune.tune", "TuneResult"),
    "tune_precision": ("infer.tune.tune", "tune_precision"),
    "DoctorReport": ("infer.doctor", "DoctorReport"),
    "diagnose": ("infer.doctor", "diagnose"),
}

__all__ = [
    "AippOptions", "BinInfoReport", "CompareOptions", "CompareResult", "ConvertOptions", "ConvertResult",
    "DatasetManifest", "DoctorReport", "DumpOptions", "DumpResult", "FreezeReport", "GraphReport", "ImageOptions",
    "InferError", "InputRequest", "ModelContract", "PipelineConfig", "PipelineResult", "RunOptions", "RunResult",
    "ScaleOptions", "Thresholds", "TuneOptions", "TuneResult", "compare_outputs", "convert_model", "describe_path",
    "diagnose", "dump_bins", "freeze_model", "inspect_model", "load_config", "load_contract", "load_manifest",
    "run_inference", "run_model", "run_pipeline", "run_sharded", "tune_precision",
]  # a literal list, so type checkers see the API; equal to _EXPORTS (tests/test_api.py)

if TYPE_CHECKING:
    from binio.errors import InferError
    from binio.manifest import DatasetManifest, load_manifest
    from ckpt2pb.inputs import InputRequest
    from ckpt2pb.inspection import GraphReport, inspect_model
    from infer.compare.compare import compare as compare_outputs
    from infer.compare.options import CompareOptions
    from infer.compare.result import CompareResult
    from infer.compare.thresholds import Thresholds
    from infer.contract import ModelContract, load_contract
    from infer.convert import ConvertOptions, ConvertResult, convert_model
    from infer.data.aipp import AippOptions
    from infer.data.bininfo import BinInfoReport, describe_path
    from infer.data.dump import DumpResult, dump_bins
    from infer.data.options import DumpOptions, ImageOptions
    from infer.doctor import DoctorReport, diagnose
    from infer.freeze import FreezeReport, freeze_model
    from infer.pipeline.config import PipelineConfig, load_config
    from infer.pipeline.runner import PipelineResult, run_pipeline
    from infer.run.entry import run as run_inference
    from infer.run.options import RunOptions, ScaleOptions
    from infer.run.plain import RunResult, run_model
    from infer.run.sharded import run_sharded
    from infer.tune.tune import TuneOptions, TuneResult, tune_precision


def __getattr__(name: str) -> Any:
    """Imports an exported name on first use (PEP 562) and keeps it, so later lookups cost nothing."""
    try:
        module, attribute = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'infer' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
