"""The top layer: model contract, stages, runners, comparison, reports and the `infer` command line.

The Python API is what this package exports (``__all__``): one function per stage, its options and its result,
the model contract and the one error root. Each stage's package (``infer.freeze``, ``infer.convert``,
``infer.dump_bin``, ``infer.run``, ``infer.compare``, ``infer.tune``...) exports the same names and a few more;
its modules whose names start with ``_`` are its own. Each name is imported the first time it is used, so
``import infer`` (and ``infer --help``) stays fast and imports no framework::

    import infer

    frozen = infer.freeze_model("ckpt/model.ckpt", "model", infer.FreezeOptions(
        outputs=("probs:0",), batch=8, assignments={"is_training": "false"}))
    converted = infer.convert_model(frozen.contract, infer.ConvertOptions(soc_version="Ascend310"))
    ...

Every stage after freeze takes the contract as a `ModelContract` or as the path of its model.json.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from infer._exports import lazy_exports
from infer._version import __version__ as __version__  # `infer.__version__`, as packages spell it

if TYPE_CHECKING:
    from binio.errors import InferError
    from binio.manifest import DatasetManifest, load_manifest
    from ckpt2pb.inspection import GraphReport, inspect_model
    from infer.bin_info import BinInfoReport, describe_path
    from infer.compare import CompareOptions, CompareResult, Thresholds, compare_outputs
    from infer.contract import ModelContract, load_contract
    from infer.convert import ConvertOptions, ConvertResult, convert_model
    from infer.doctor import DoctorReport, diagnose
    from infer.dump_bin import DumpOptions, DumpResult, dump_bins
    from infer.freeze import FreezeOptions, FreezeReport, freeze_model
    from infer.inspect import InspectOptions, InspectResult, inspect_path
    from infer.model_aipp import AippOptions
    from infer.pipeline import PipelineConfig, PipelineResult, load_config, run_pipeline
    from infer.preprocessing import ImageOptions
    from infer.remote import HostSurvey, RemoteOptions, survey_host
    from infer.run import RunOptions, RunResult, ScaleOptions, run_model
    from infer.tune import TuneOptions, TuneResult, tune_precision

__all__ = [
    "AippOptions", "BinInfoReport", "CompareOptions", "CompareResult", "ConvertOptions", "ConvertResult",
    "DatasetManifest", "DoctorReport", "DumpOptions", "DumpResult", "FreezeOptions", "FreezeReport", "GraphReport",
    "HostSurvey", "ImageOptions", "InferError", "InspectOptions", "InspectResult", "ModelContract", "PipelineConfig",
    "PipelineResult", "RemoteOptions", "RunOptions", "RunResult", "ScaleOptions", "Thresholds", "TuneOptions",
    "TuneResult", "compare_outputs", "convert_model", "describe_path", "diagnose", "dump_bins", "freeze_model",
    "inspect_model", "inspect_path", "load_config", "load_contract", "load_manifest", "run_model", "run_pipeline",
    "survey_host", "tune_precision",
]  # a literal list, so type checkers see the API; equal to the names below (tests/test_api.py)

_lookup, __dir__ = lazy_exports(__name__, {
    "AippOptions": "infer.model_aipp",
    "BinInfoReport": "infer.bin_info",
    "CompareOptions": "infer.compare",
    "CompareResult": "infer.compare",
    "ConvertOptions": "infer.convert",
    "ConvertResult": "infer.convert",
    "DatasetManifest": "binio.manifest",
    "DoctorReport": "infer.doctor",
    "DumpOptions": "infer.dump_bin",
    "DumpResult": "infer.dump_bin",
    "FreezeOptions": "infer.freeze",
    "FreezeReport": "infer.freeze",
    "GraphReport": "ckpt2pb.inspection",
    "HostSurvey": "infer.remote",
    "ImageOptions": "infer.preprocessing",
    "InferError": "binio.errors",
    "InspectOptions": "infer.inspect",
    "InspectResult": "infer.inspect",
    "ModelContract": "infer.contract",
    "PipelineConfig": "infer.pipeline",
    "PipelineResult": "infer.pipeline",
    "RemoteOptions": "infer.remote",
    "RunOptions": "infer.run",
    "RunResult": "infer.run",
    "ScaleOptions": "infer.run",
    "Thresholds": "infer.compare",
    "TuneOptions": "infer.tune",
    "TuneResult": "infer.tune",
    "compare_outputs": "infer.compare",
    "convert_model": "infer.convert",
    "describe_path": "infer.bin_info",
    "diagnose": "infer.doctor",
    "survey_host": "infer.remote",
    "dump_bins": "infer.dump_bin",
    "freeze_model": "infer.freeze",
    "inspect_model": "ckpt2pb.inspection",
    "inspect_path": "infer.inspect",
    "load_config": "infer.pipeline",
    "load_contract": "infer.contract",
    "load_manifest": "binio.manifest",
    "run_model": "infer.run",
    "run_pipeline": "infer.pipeline",
    "tune_precision": "infer.tune",
})


def __getattr__(name: str) -> Any:
    """A name of the API, imported on first use; the first one also keeps TensorFlow's C++ start-up lines and its
    deprecation notes off the caller's stderr, as the command line does (`TF_CPP_MIN_LOG_LEVEL` or a logging level
    the caller set wins; importing TensorFlow before infer keeps its lines too)."""
    import logging

    from ckpt2pb.logs import quiet_tensorflow_import, quiet_tensorflow_logs

    quiet_tensorflow_logs(python_logs=logging.getLogger("tensorflow").level == logging.NOTSET)
    quiet_tensorflow_import()
    return _lookup(name)
