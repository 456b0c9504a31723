"""report.csv with msaccucmp's columns, in its order, so scripts written for Huawei's comparator read ours.

One row per model output (over the whole dataset), then, with --layerwise, one row per intermediate tensor in
graph order. msaccucmp repeats the DataType and Address headers (one pair per side), and so do we; unknown
cells hold ``NaN`` as in its files. What was compared (both sides, the sha256s, precision, thresholds, sample
order) goes into a sidecar, report.provenance.json: a comment line would break the readers of msaccucmp's files.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from binio.atomic import write_bytes_atomic, write_json_atomic
from binio.document import json_float
from binio.dtypes import dtype
from binio.spec import node_name, output_index
from infer.compare._metrics import Metrics
from infer.compare.metric_names import CSV_METRICS
from infer.compare.result import CompareResult
from infer.compare.thresholds import Failure

REPORT_CSV = "report.csv"
PROVENANCE_JSON = "report.provenance.json"
COLUMNS: tuple[str, ...] = (
    "Index", "OpType", "NPUDump", "DataType", "Address", "GroundTruth", "DataType", "Address", "TensorIndex",
    "Shape", *CSV_METRICS, "CompareFailReason",
)
def tf_type_name(name: str) -> str:
    """msaccucmp's dtype spelling: ``float16`` -> ``DT_FLOAT16``, ``float32`` -> ``DT_FLOAT``."""
    return dtype(name).msaccucmp


def _cell(value: float) -> str:
    """The number as repr writes it; NaN and inf spelled as in report.json."""
    return str(json_float(float(value)))


def _metric_cells(metrics: Metrics | None) -> list[str]:
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
        name = output.name
        tensor_index = f"{node_name(name)}:output:{output_index(name)}"
        rows.append([str(len(rows)), "NaN", name, tf_type_name(output.actual_dtype), "NaN", name,
                     tf_type_name(output.golden_dtype), "NaN", tensor_index, str(list(output.shape)),
                     *_metric_cells(output.metrics), _reason(output.failures, "; ".join(result.asked_reasons(output)))])
    if result.layerwise is not None:
        warning = result.layerwise.is_warning
        for layer in result.layerwise.rows:
            tensor_index = f"{node_name(layer.tensor)}:output:{output_index(layer.tensor)}"
            dump = layer.tensor if layer.matched else "NaN"
            rows.append([str(len(rows)), layer.op_type, dump, tf_type_name(layer.dtype), "NaN", layer.tensor,
                         tf_type_name(layer.dtype), "NaN", tensor_index, str(list(layer.shape)),
                         *_metric_cells(layer.metrics), _reason(layer.failures, layer.note(warning=warning))])
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
