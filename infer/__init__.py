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

from binio.exports import lazy_exports
from infer._version import __version__ as __version__  # `infer.__version__`, as packages spell it

if TYPE_CHECKING:  # the API (binio/exports.py): type checkers read it here, lazy_exports on first use
    from binio.errors import InferError as InferError
    from binio.manifest import DatasetManifest as DatasetManifest
    from binio.manifest import load_manifest as load_manifest
    from ckpt2pb.inspection import GraphReport as GraphReport
    from ckpt2pb.inspection import inspect_model as inspect_model
    from infer.bin_info import BinInfoReport as BinInfoReport
    from infer.bin_info import describe_path as describe_path
    from infer.compare import CompareOptions as CompareOptions
    from infer.compare import CompareResult as CompareResult
    from infer.compare import Thresholds as Thresholds
    from infer.compare import compare_outputs as compare_outputs
    from infer.contract import ModelContract as ModelContract
    from infer.contract import load_contract as load_contract
    from infer.convert import ConvertOptions as ConvertOptions
    from infer.convert import ConvertResult as ConvertResult
    from infer.convert import convert_model as convert_model
    from infer.doctor import DoctorReport as DoctorReport
    from infer.doctor import diagnose as diagnose
    from infer.dump_bin import DumpOptions as DumpOptions
    from infer.dump_bin import DumpResult as DumpResult
    from infer.dump_bin import dump_bins as dump_bins
    from infer.freeze import FreezeOptions as FreezeOptions
    from infer.freeze import FreezeReport as FreezeReport
    from infer.freeze import freeze_model as freeze_model
    from infer.inspect import InspectOptions as InspectOptions
    from infer.inspect import InspectResult as InspectResult
    from infer.inspect import inspect_path as inspect_path
    from infer.model_aipp import AippOptions as AippOptions
    from infer.pipeline import PipelineConfig as PipelineConfig
    from infer.pipeline import PipelineResult as PipelineResult
    from infer.pipeline import load_config as load_config
    from infer.pipeline import run_pipeline as run_pipeline
    from infer.preprocessing import ImageOptions as ImageOptions
    from infer.remote import HostSurvey as HostSurvey
    from infer.remote import RemoteOptions as RemoteOptions
    from infer.remote import survey_host as survey_host
    from infer.run import RunOptions as RunOptions
    from infer.run import RunResult as RunResult
    from infer.run import ScaleOptions as ScaleOptions
    from infer.run import run_model as run_model
    from infer.tune import TuneOptions as TuneOptions
    from infer.tune import TuneResult as TuneResult
    from infer.tune import tune_precision as tune_precision

_lookup, __dir__ = lazy_exports(__name__)


def __getattr__(name: str) -> Any:
    """A name of the API, imported on first use; the first one also keeps TensorFlow's C++ start-up lines and its
    deprecation notes off the caller's stderr, as the command line does (`TF_CPP_MIN_LOG_LEVEL` or a logging level
    the caller set wins; importing TensorFlow before infer keeps its lines too)."""
    if name.startswith("__"):  # `__all__`, or a tool probing for a dunder: nothing of TensorFlow's to quiet
        return _lookup(name)
    import logging

    from ckpt2pb.logs import quiet_tensorflow_import, quiet_tensorflow_logs

    quiet_tensorflow_logs(python_logs=logging.getLogger("tensorflow").level == logging.NOTSET)
    quiet_tensorflow_import()
    return _lookup(name)
