"""msaccucmp itself (mindstudio-probe 26.2.0, its command line) reads the golden folder infer writes, and writes the
CSV layout infer's report.csv has.

The NPU side is tests/infer/compare/npu_dump.py's stand-in: nano-format dumps (the one dump format msaccucmp reads
without CANN's libascend_dump_parser.so) and a fusion rule naming the TF op of each NPU op. The golden side is
`dump_golden_tensors`, as `infer compare --dump-golden` writes it, with op names holding ``/`` and ``.`` and an op
of two outputs.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from binio.spec import node_name, output_index
from infer.compare._judge.metrics import compute_metrics
from infer.compare._layers.golden_dump import dump_golden_tensors, golden_file_name
from infer.compare._reports.report_csv import COLUMNS, metric_cells, shape_cell, tensor_index, type_name
from infer.compare.metric_names import CSV_METRICS
from tests.infer.compare.msaccucmp_code import run_msaccucmp
from tests.infer.compare.npu_dump import NpuOp, write_fusion_rule, write_npu_dump

TIMESTAMP = 1_700_000_000_000_000  # 16 digits: msaccucmp sorts dumps by such a timestamp


def _golden() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    return {"block.1/conv:0": rng.normal(size=(1, 4, 4, 3)).astype(np.float32),
            "head/logits:0": rng.normal(size=(2, 10)).astype(np.float32),
            "split:0": rng.normal(size=(2, 5)).astype(np.float32),
            "split:1": rng.uniform(0.5, 2.0, size=(2, 5)).astype(np.float32)}


def _actual(golden: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(8)
    noise = {"block.1/conv:0": 0.05, "head/logits:0": 1e-4, "split:0": 0.01, "split:1": 0.2}
    return {name: (value + rng.normal(size=value.shape) * noise[name]).astype(np.float32)
            for name, value in golden.items()}


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, str]], list[str]]:
    """msaccucmp run on infer's golden folder: the folder, its CSV's rows by column, and its header."""
    root = tmp_path_factory.mktemp("msaccucmp_golden")
    golden, actual = _golden(), _actual(_golden())
    dump_golden_tensors(golden, root / "golden")
    ops = [NpuOp("block.1/conv", "Conv2D", "block.1/conv", (actual["block.1/conv:0"],)),
           NpuOp("head/logits", "MatMulV2", "head/logits", (actual["head/logits:0"],), ("block.1/conv:0",)),
           NpuOp("split", "SplitD", "split", (actual["split:0"], actual["split:1"]), ("head/logits:0",))]
    write_npu_dump(ops, root / "npu", TIMESTAMP)
    write_fusion_rule(ops, root / "fusion.json")
    (root / "out").mkdir()
    run_msaccucmp("compare", "-m", str(root / "npu"), "-g", str(root / "golden"), "-f", str(root / "fusion.json"),
                  "-out", str(root / "out"))
    [result] = list((root / "out").glob("result_*.csv"))
    with open(result, newline="") as handle:
        rows = list(csv.reader(handle))
    # DataType is a repeated header: keep rows as lists, keyed by position, and name them by the unique headers.
    header = rows[0]
    return root, [dict(zip(header, row, strict=True)) | {"_row": ",".join(row)} for row in rows[1:]], header


def test_golden_files_are_named_as_msaccucmp_looks_them_up(tmp_path: Path) -> None:
    written = dump_golden_tensors(_golden(), tmp_path)
    names = sorted(p.name.rsplit(".", 2)[0] for p in written)
    assert names == ["block_1_conv.0", "head_logits.0", "split.0", "split.1"]
    assert golden_file_name("a.b/c.d:2", 1234567890123456) == "a_b_c_d.2.1234567890123456.npy"


@pytest.mark.slow
def test_msaccucmp_finds_every_golden_tensor(compared: tuple[Path, list[dict[str, str]], list[str]]) -> None:
    _, rows, _ = compared
    assert [row["TensorIndex"] for row in rows] == [tensor_index(name) for name in _golden()]
    assert [row["GroundTruth"] for row in rows] == [node_name(name) for name in _golden()]
    for row in rows:
        assert row["CompareFailReason"] == "", row["_row"]
        assert "NaN" not in [row[metric] for metric in CSV_METRICS], row["_row"]


def test_msaccucmps_header_is_report_csv_columns(compared: tuple[Path, list[dict[str, str]], list[str]]) -> None:
    _, _, header = compared
    assert tuple(header) == COLUMNS
    assert header.count("Address") == 1  # the golden is npy files: msaccucmp drops its Address column


def test_msaccucmps_cells_are_spelled_as_ours(compared: tuple[Path, list[dict[str, str]], list[str]]) -> None:
    _, rows, _ = compared
    for row in rows:
        assert row["DataType"] == type_name("float32") and row["Address"] == "NaN"
        # msaccucmp's Shape is of the array it compared (the nano dump's, flat); ours the tensor's: the same form.
        assert row["Shape"] == shape_cell((int(row["Shape"][1:-1]),))
    assert shape_cell((1, 4, 4, 3)) == "[1,4,4,3]" and shape_cell(()) == "[]"


def test_msaccucmps_numbers_are_infers(compared: tuple[Path, list[dict[str, str]], list[str]]) -> None:
    _, rows, _ = compared
    golden, actual = _golden(), _actual(_golden())
    for name, row in zip(golden, rows, strict=True):
        assert output_index(name) == int(row["TensorIndex"].rpartition(":")[2])
        ours = compute_metrics(actual[name], golden[name], atol=0.0, rtol=0.0)
        assert ours.standard_deviation == row["StandardDeviation"], name
        # Six decimals of float32 arithmetic: 5e-7 of rounding, and float32's precision as in test_msaccucmp_metrics
        # (1e-6 of the metric's unit: 1, the element count for a sum of ratios, the data's size for an error).
        units = {"AccumulatedRelativeError": golden[name].size, "MaxAbsoluteError": 5.0, "MeanAbsoluteError": 5.0,
                 "RootMeanSquareError": 5.0}
        for metric in CSV_METRICS:
            if metric != "StandardDeviation":
                theirs = float(row[metric])
                tolerance = 5e-7 + 1e-6 * max(abs(theirs), units.get(metric, 1.0))
                assert abs(ours.value(metric) - theirs) <= tolerance, (name, metric)


def test_departure_report_csv_keeps_every_digit(compared: tuple[Path, list[dict[str, str]], list[str]]) -> None:
    # msaccucmp writes six decimals, so a cosine of 0.99999999x reads 1.000000 there; report.csv's cell is the number.
    _, rows, _ = compared
    golden, actual = _golden(), _actual(_golden())
    ours = compute_metrics(actual["head/logits:0"], golden["head/logits:0"], atol=0.0, rtol=0.0)
    theirs = next(row for row in rows if row["GroundTruth"] == "head/logits")
    assert theirs["CosineSimilarity"] == "1.000000" and ours.cosine_similarity < 1.0
    cells = dict(zip(CSV_METRICS, metric_cells(ours), strict=True))
    assert float(cells["CosineSimilarity"]) == ours.cosine_similarity
    assert f"{float(cells['CosineSimilarity']):.6f}" == theirs["CosineSimilarity"]
