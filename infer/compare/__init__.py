"""`infer compare`: the converted model against TensorFlow, with Ascend's accuracy metrics."""

from __future__ import annotations

from typing import TYPE_CHECKING

from binio.exports import lazy_exports

if TYPE_CHECKING:  # the exports (binio/exports.py): type checkers read them here, lazy_exports on first use
    from infer.compare._compare import compare as compare_outputs  # noqa: F401 (the stage, under its API name)
    from infer.compare._compare import compare_run_folders as compare_run_folders
    from infer.compare._gears import compare_gears as compare_gears
    from infer.compare._judge.aipp_check import AippCheck as AippCheck
    from infer.compare._layers.stand_in import compare_layers as compare_layers
    from infer.compare._npu.dump_set import run_folder_of_dump as run_folder_of_dump
    from infer.compare._npu.layers import compare_npu_layers as compare_npu_layers
    from infer.compare._reports.folder import check_output_folder as check_output_folder
    from infer.compare._reports.folder import write_reports as write_reports
    from infer.compare._sides.golden import tensorflow_golden as tensorflow_golden
    from infer.compare._sides.run_folders import resolve_run_folder as resolve_run_folder
    from infer.compare.errors import LayerwiseError as LayerwiseError
    from infer.compare.gears_result import GearsCompareResult as GearsCompareResult
    from infer.compare.options import CompareOptions as CompareOptions
    from infer.compare.result import CompareResult as CompareResult
    from infer.compare.thresholds import Thresholds as Thresholds


__getattr__, __dir__ = lazy_exports(__name__)
