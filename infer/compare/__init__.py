"""`infer compare`: the converted model against TensorFlow, with Ascend's accuracy metrics."""

from __future__ import annotations

from typing import TYPE_CHECKING

from infer._exports import lazy_exports

if TYPE_CHECKING:
    from infer.compare._compare import compare as compare_outputs
    from infer.compare._compare import compare_run_folders
    from infer.compare._gears import compare_gears
    from infer.compare._judge.aipp_check import AippCheck
    from infer.compare._layers.stand_in import compare_layers
    from infer.compare._npu.dump_set import run_folder_of_dump
    from infer.compare._npu.layers import compare_npu_layers
    from infer.compare._reports.folder import check_output_folder, write_reports
    from infer.compare._sides.golden import tensorflow_golden
    from infer.compare._sides.run_folders import resolve_run_folder
    from infer.compare.errors import LayerwiseError
    from infer.compare.gears_result import GearsCompareResult
    from infer.compare.options import CompareOptions
    from infer.compare.result import CompareResult
    from infer.compare.thresholds import Thresholds

__all__ = [
    "AippCheck", "CompareOptions", "CompareResult", "GearsCompareResult", "LayerwiseError", "Thresholds",
    "check_output_folder", "compare_gears", "compare_layers", "compare_npu_layers", "compare_outputs",
    "compare_run_folders", "resolve_run_folder", "run_folder_of_dump", "tensorflow_golden", "write_reports",
]

__getattr__, __dir__ = lazy_exports(__name__, {
    "AippCheck": "infer.compare._judge.aipp_check",
    "CompareOptions": "infer.compare.options",
    "CompareResult": "infer.compare.result",
    "GearsCompareResult": "infer.compare.gears_result",
    "compare_gears": "infer.compare._gears",
    "LayerwiseError": "infer.compare.errors",
    "Thresholds": "infer.compare.thresholds",
    "check_output_folder": "infer.compare._reports.folder",
    "compare_layers": "infer.compare._layers.stand_in",
    "compare_npu_layers": "infer.compare._npu.layers",
    "compare_outputs": "infer.compare._compare:compare",
    "compare_run_folders": "infer.compare._compare",
    "resolve_run_folder": "infer.compare._sides.run_folders",
    "run_folder_of_dump": "infer.compare._npu.dump_set",
    "tensorflow_golden": "infer.compare._sides.golden",
    "write_reports": "infer.compare._reports.folder",
})
