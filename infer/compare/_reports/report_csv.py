"""report.csv in msaccucmp's layout for a TensorFlow golden, so scripts written for Huawei's comparator read ours.

One row per model output (over the whole dataset), then, with --layerwise, one row per intermediate tensor in
graph order. The header is the one msaccucmp (mindstudio-probe 26.2.0) writes when the golden side is a folder of
npy files: DataType repeated (one per side) and a single Address, the NPU side's, since it drops the golden's
(vector_cmp/vector_comparison.py, `_pre_handle_header`); tests/infer/compare/test_msaccucmp_golden.py holds ours to
the header msaccucmp itself writes. Cells are spelled as in its files: NPUDump and GroundTruth hold op names,
TensorIndex ``op:output:N``, DataType numpy's dtype name, Shape ``[1,2,3]``, unknown cells ``NaN``, the
StandardDeviation cell ``(mean;std),(mean;std)`` to three decimals. The other metric cells carry every digit of
the number (msaccucmp rounds to six decimals: docs/metrics.md). What was compared (both sides, the sha256s,
precision, thresholds, sample order) goes into a sidecar, report.provenance.json: a comment line would break the
readers of msaccucmp's files.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from binio.atomic import write_bytes_atomic, write_json_atomic
from binio.document import json_float
from binio.dtypes import dtype
from binio.spec import node_name, output_index
from infer.compare._judge.metrics import Metrics
from infer.compare.metric_names import CSV_METRICS
from infer.compare.result import CompareResult
from infer.compare.thresholds import Failure

REPORT_CSV = "report.csv"
PROVENANCE_JSON = "report.provenance.json"
COLUMNS: tuple[str, ...] = (
    "Index", "OpType", "NPUDump", "DataType", "Address", "GroundTruth", "DataType", "TensorIndex", "Shape",
    *CSV_METRICS, "CompareFailReason",
)


def type_name(name: str) -> str:
    """msaccucmp's DataType cell: the dtype of the array it compared, as numpy names it (``float16``)."""
    return dtype(name).msaccucmp


def shape_cell(shape: tuple[int, ...]) -> str:
    """msaccucmp's Shape cell: ``[1,224,224,3]``, no spaces."""
    return "[" + ",".join(str(d) for d in shape) + "]"


def tensor_index(tensor: str) -> str:
    """msaccucmp's TensorIndex: ``scope/conv:1`` -> ``scope/conv:output:1``."""
    return f"{node_name(tensor)}:output:{output_index(tensor)}"


def _cell(value: float) -> str:
    """The number as repr writes it; NaN and inf spelled as in report.json."""
    return str(json_float(float(value)))


def metric_cells(metrics: Metrics | None) -> list[str]:
    if metrics is None:
        return ["NaN"] * len(CSV_METRICS)
    return [metrics.standard_deviation if name == "StandardDeviation" else _cell(metrics.value(name))
            for name in CSV_METRICS]


def _reason(failures: tuple[Failure, ...], extra: str = "") -> str:
    parts = [f.describe() for f in failures]
    return "; ".join([extra, *parts] if extra else parts)


def csv_rows(result: CompareResult) -> list[list[str]]:
    rows: list[list[str]] = []
    for output in result.outputs:
        op = node_name(output.name)
        rows.append([str(len(rows)), "NaN", op, type_name(output.actual_dtype), "NaN", op,
                     type_name(output.golden_dtype), tensor_index(output.name), shape_cell(output.shape),
                     *metric_cells(output.metrics), _reason(output.failures, "; ".join(result.asked_reasons(output)))])
    if result.layerwise is not None:
        warning, factor = result.layerwise.is_warning, result.layerwise.factor
        for layer in result.layerwise.rows:
            op = node_name(layer.tensor)
            npu = layer.npu_op or op  # msaccucmp's NPUDump column: the om op whose dump was compared
            rows.append([str(len(rows)), layer.op_type, npu if layer.matched else "NaN", type_name(layer.dtype), "NaN",
                         op, type_name(layer.dtype), tensor_index(layer.tensor), shape_cell(layer.shape),
                         *metric_cells(layer.metrics),
                         _reason(layer.failures, layer.note(warning=warning, factor=factor))])
    return rows


def write_report_csv(result: CompareResult, folder: Path) -> Path:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(COLUMNS)
    writer.writerows(csv_rows(result))
    path = Path(folder) / REPORT_CSV
    write_bytes_atomic(path, buffer.getvalue().encode())
    return path


def write_provenance_sidecar(result: CompareResult, folder: Path) -> Path:
    """report.csv's sidecar: the verdict line and what was compared."""
    path = Path(folder) / PROVENANCE_JSON
    write_json_atomic(path, {"schema": "infer.compare-provenance", "version": 1, "describes": REPORT_CSV,
                             "verdict_line": result.verdict_line(),
                             "provenance": None if result.provenance is None else result.provenance.to_json()})
    return path
