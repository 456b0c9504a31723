"""`compare --layerwise --npu-dump`: TensorFlow's tensors against an NPU's dump, through the om's fusion map.

The NPU is tests/npu_device.py: the om of tests/npu_models.py (a conv + bias + relu fused into one Conv2D op with an
NC1HWC0 output, a matmul + bias fused into a MatMulV2 with a FRACTAL_NZ output, a random op, ATC's TransData and
Cast ops) computed with its own random draw, one fused op damaged, each op's tensors written in the device layouts
with the test's own writers: the standard dump format for infer, msaccucmp's nano format for msaccucmp, which
runs on the same tensors with the golden folder infer writes (--dump-golden) and must name the same op first.
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from atc_wrap.ascend_files.npu_dump import read_npu_dump
from infer.compare import compare_npu_layers
from infer.compare.errors import LayerwiseError
from infer.compare.layer_result import LayerwiseResult
from infer.compare.thresholds import Thresholds
from tests.atc_wrap.ascend_writer import DumpTensorSpec, dump_bytes
from tests.builders.bins import write_dataset
from tests.cli import run_cli
from tests.infer.compare.msaccucmp_code import run_msaccucmp
from tests.infer.run_data import use_fake_tools
from tests.npu_device import (
    DumpedOp,
    device_values,
    dumped_ops,
    read_device_model,
    tf_node_names,
    write_fusion_rule,
    write_nano_dumps,
    write_standard_dumps,
)
from tests.npu_models import DENSE_NODES, DENSE_OP, npu_model

pytestmark = pytest.mark.slow
STEP = Path("20240101120000") / "0" / "model" / "1" / "0"  # {time}/{device}/{model_name}/{model_id}/{step}


class Npu:
    """The model, one batch of bins, and the NPU's tensors of that batch."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.model = npu_model(root / "model")
        self.x = np.random.default_rng(3).standard_normal((2, 8, 8, 3)).astype(np.float32)
        self.bins = write_dataset(root / "bins", {"x:0": [self.x]})
        assert self.model.converted is not None
        self.device = read_device_model(self.model.folder / self.model.converted.path,
                                        tf_node_names(self.model.pb_path))

    def dumped(self, damage: str = "") -> list[DumpedOp]:
        return dumped_ops(self.device, device_values(self.model.pb_path, self.device, {"x:0": self.x}, damage=damage))

    def dump(self, folder: Path, damage: str = "") -> Path:
        write_standard_dumps(folder / STEP, self.dumped(damage))
        return folder

    def compare(self, dump: Path, **kw: object) -> LayerwiseResult:
        return compare_npu_layers(self.model, self.bins, Thresholds(), dump, atol=1e-4, rtol=1e-3, **kw)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def npu(tmp_path_factory: pytest.TempPathFactory) -> Npu:
    return Npu(tmp_path_factory.mktemp("npu_compare"))


def _msaccucmp_rows(npu: Npu, dumped: list[DumpedOp], golden: Path, work: Path) -> list[dict[str, str]]:
    write_nano_dumps(work / "nano", dumped)
    write_fusion_rule(npu.device, work / "fusion.json")
    (work / "out").mkdir()
    # exit 2 is msaccucmp's "no dump file" for the Data, Const and NetOutput ops, which no device dumps
    run_msaccucmp("compare", "-m", str(work / "nano"), "-g", str(golden), "-f", str(work / "fusion.json"),
                  "-out", str(work / "out"), ok=(0, 2))
    [result] = list((work / "out").glob("result_*.csv"))
    with open(result, newline="") as handle:
        return list(csv.DictReader(handle))


def _fails(row: dict[str, str]) -> bool:
    """msaccucmp's default rule on the relative measures infer judges layers by."""
    return float(row["CosineSimilarity"]) < 0.99 or float(row["RelativeEuclideanDistance"]) > 0.05


def test_the_damaged_fused_op_is_named_first_by_infer_and_by_msaccucmp(npu: Npu, tmp_path: Path) -> None:
    dumped = npu.dumped(damage="dense/BiasAdd:0")
    write_standard_dumps(tmp_path / "dump" / STEP, dumped)
    layers = npu.compare(tmp_path / "dump", dump_golden=tmp_path / "golden")
    rows = {row.tensor: row for row in layers.rows}
    first = layers.diverges_at
    assert first is not None and first.tensor == "dense/BiasAdd:0"
    assert (first.npu_op, first.npu_op_type, first.fused_nodes) == (DENSE_OP, "MatMulV2", DENSE_NODES)
    assert first.npu_op_text == "NPU op dense/MatMul (MatMulV2) fusing dense/MatMul, dense/BiasAdd"
    assert first.layout == "FRACTAL_NZ [1, 1, 16, 16] turned into ND [2, 10] (the om's origin)"
    # upstream, the conv's NC1HWC0 output turned back into NHWC matches TensorFlow: the layout was read right
    relu = rows["relu:0"]
    assert relu.passed and relu.npu_op == "conv/Conv2D" and relu.fused_nodes == ("conv/Conv2D", "conv/BiasAdd", "relu")
    assert relu.layout == "NC1HWC0 [2, 1, 8, 8, 16] turned into NHWC [2, 8, 8, 4] (the om's origin)"
    assert rows["flat:0"].passed and not rows["out:0"].passed and not rows["out:0"].diverges_here
    assert rows["conv/BiasAdd:0"].unmatched_reason == ("fused into NPU op conv/Conv2D (Conv2D), which does not "
                                                       "output it")
    assert layers.origins == ("dense/BiasAdd:0",) and layers.fed_from_dump == ("noise:0",)

    theirs = _msaccucmp_rows(npu, dumped, tmp_path / "golden", tmp_path / "msaccucmp")
    compared = [row for row in theirs if row["CosineSimilarity"] not in ("NaN", "")]
    first_theirs = next(row for row in compared if _fails(row))
    assert first_theirs["NPUDump"] == DENSE_OP and first_theirs["GroundTruth"] == ",".join(DENSE_NODES)
    assert all(not _fails(row) for row in compared[:compared.index(first_theirs)])
    # the same numbers on the same tensors (msaccucmp prints six decimals)
    for tensor, op in (("relu:0", "conv/Conv2D"), ("dense/BiasAdd:0", DENSE_OP)):
        row = next(r for r in compared if r["NPUDump"] == op)
        metrics = rows[tensor].metrics
        assert metrics is not None
        assert abs(metrics.cosine_similarity - float(row["CosineSimilarity"])) < 1e-5
        assert abs(metrics.relative_euclidean_distance - float(row["RelativeEuclideanDistance"])) < 1e-5


def test_the_npu_random_draw_is_fed_to_tensorflow_and_what_follows_is_compared(npu: Npu, tmp_path: Path) -> None:
    dump = npu.dump(tmp_path / "dump")
    layers = npu.compare(dump)
    out = next(row for row in layers.rows if row.tensor == "out:0")
    assert layers.fed_from_dump == ("noise:0",) and not layers.skipped_random
    assert out.passed and out.metrics is not None and out.metrics.cosine_similarity > 0.99999
    assert layers.diverges_at is None
    # without the random op's dump, TensorFlow draws its own numbers and what follows them is skipped, not compared
    (noise,) = (dump / STEP).glob("FrameworkOp.noise.*")
    noise.unlink()
    layers = npu.compare(dump)
    assert layers.fed_from_dump == () and [row.tensor for row in layers.skipped_random] == ["out:0"]
    assert layers.skipped_random[0].random_source == "noise"


def test_the_dumped_tensors_are_judged_against_the_stand_ins_band_unless_the_draw_was_fed(npu: Npu,
                                                                                        tmp_path: Path) -> None:
    """The band comes from the stand-in's emulation of the om's precision mode; with the NPU's random draw fed to
    TensorFlow (which the emulation cannot share) there is none, and the result says why."""
    dump = npu.dump(tmp_path / "dump", damage="dense/BiasAdd:0")
    fed = npu.compare(dump, bands_from=tmp_path / "cache")
    assert fed.bands is None and fed.band_note.startswith("no expected-error band: TensorFlow was fed the dump's")
    assert fed.diverges_at is not None and fed.diverges_at.tensor == "dense/BiasAdd:0"  # by msit's limits
    (noise,) = (dump / STEP).glob("FrameworkOp.noise.*")
    noise.unlink()
    banded = npu.compare(dump, bands_from=tmp_path / "cache")
    assert banded.bands is not None and banded.band_note == ""
    rows = {row.tensor: row for row in banded.rows}
    assert rows["relu:0"].within_band(10.0) and rows["flat:0"].within_band(10.0)
    # The stand-in has no tensor for the fused Gemm feeding a random branch's Add: that row has no band, and is
    # judged by msit's limits, which it breaks.
    assert not rows["dense/BiasAdd:0"].has_band and rows["dense/BiasAdd:0"].failures
    assert banded.diverges_at is not None and banded.diverges_at.tensor == "dense/BiasAdd:0"


def test_a_dump_file_that_cannot_be_read_is_named_in_its_row_and_the_rest_is_compared(npu: Npu,
                                                                                   tmp_path: Path) -> None:
    dump = npu.dump(tmp_path / "dump")
    (conv,) = (dump / STEP).glob("Conv2D.conv_Conv2D.*")
    conv.write_bytes(conv.read_bytes()[:40])
    rows = {row.tensor: row for row in npu.compare(dump).rows}
    assert rows["relu:0"].unmatched_reason.startswith(f"its dump file cannot be read: {conv}: not an NPU dump file, "
                                                      "or a truncated one")
    assert rows["dense/BiasAdd:0"].passed


def _as_ffts_slices(path: Path, op_name: str, axis: int) -> None:
    """The op's dump file as FFTS+ automatic mode writes it: two files, one per thread, each half its output
    along `axis`, with the slicing record msaccucmp reads (dump_data_object.py: threadMode, outputCutList,
    output_tensor_slice)."""
    (output,) = read_npu_dump(path).outputs
    full = output.array()
    parts = np.array_split(full, 2, axis=axis)
    cut = [2 if dim == axis else 1 for dim in range(full.ndim)]
    ranges, start = [], 0
    for part in parts:
        ranges.append([[{"lower": start if dim == axis else 0,
                         "higher": (start if dim == axis else 0) + size} for dim, size in enumerate(part.shape)]])
        start += part.shape[axis]
    record = json.dumps({"slice_instance_num": 2, "threadMode": 1, "outputCutList": [cut],
                         "output_tensor_slice": ranges})
    op_type, safe, task, stream, stamp = path.name.split(".")
    for thread, part in enumerate(parts):
        spec = DumpTensorSpec(part, output.format, original_name=output.original_name,
                              original_format=output.original_format or None,
                              original_shape=output.original_shape)
        (path.parent / f"{op_type}.{safe}.{task}.{stream}.{stamp}.4.3.{thread}.0").write_bytes(
            dump_bytes(op_name, [], [spec], attrs=(("_sgt_json_info", record),)))
    path.unlink()


def test_ffts_plus_slices_and_long_names_are_compared_as_one_dump_would_be(npu: Npu, tmp_path: Path) -> None:
    """The issue's two folder forms on the same device values: the conv's NC1HWC0 output as two FFTS+ thread
    slices (infer kept the first, half the batch), the dense op's file under a number with mapping.csv (infer
    said "no dump file of NPU op"). Both compare to the numbers of the plain dump."""
    plain = {row.tensor: row for row in npu.compare(npu.dump(tmp_path / "plain")).rows}
    dump = npu.dump(tmp_path / "forms")
    (conv,) = (dump / STEP).glob("Conv2D.conv_Conv2D.*")
    _as_ffts_slices(conv, "conv/Conv2D", axis=0)
    (dense,) = (dump / STEP).glob("MatMulV2.dense_MatMul.*")
    number = "7" * 32
    (dump / STEP / "mapping.csv").write_text(f"{number},{dense.name}\n")
    dense.rename(dump / STEP / number)
    rows = {row.tensor: row for row in npu.compare(dump).rows}
    for tensor in ("relu:0", "dense/BiasAdd:0"):
        ours, theirs = rows[tensor].metrics, plain[tensor].metrics
        assert ours is not None and theirs is not None, rows[tensor].unmatched_reason
        assert ours.cosine_similarity == theirs.cosine_similarity
        assert ours.max_absolute_error == theirs.max_absolute_error
    assert rows["relu:0"].layout.endswith("; FFTS+ auto slicing: 2 thread slices put together into [2, 1, 8, 8, 16]")


def test_a_folder_holding_several_executions_is_refused(npu: Npu, tmp_path: Path) -> None:
    dump = npu.dump(tmp_path / "dump")
    shutil.copytree(dump / STEP, dump / STEP.parent / "1")
    with pytest.raises(LayerwiseError, match=r"holds the dumps of 2 executions \(20240101120000/0/model/1/0, "
                                             r"20240101120000/0/model/1/1\): expected one$"):
        npu.compare(dump)
    assert npu.compare(dump / STEP.parent / "1").diverges_at is None  # one execution's folder is taken
    with pytest.raises(LayerwiseError, match=r"no dump file under it"):
        npu.compare(npu.root / "bins")  # bins, not dump files


def test_npu_dump_of_a_model_that_is_not_an_om_is_refused(npu: Npu, tmp_path: Path) -> None:
    from dataclasses import replace

    assert npu.model.converted is not None
    stand_in = replace(npu.model, converted=replace(npu.model.converted, target="onnx", path="model.onnx"))
    with pytest.raises(LayerwiseError, match=r"^--npu-dump: .*model.json is converted to onnx; an NPU dump is "
                                             r"compared through the om's fusion map$"):
        compare_npu_layers(stand_in, npu.bins, Thresholds(), tmp_path, atol=0.0, rtol=0.0)



def test_run_dump_then_compare_npu_dump_on_the_command_line(npu: Npu, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """The whole path: the fake msame dumps a device whose dense layer is broken; compare, given the dump alone
    (its run folder is --actual), names the fused op first and reports it as msaccucmp would (report.csv)."""
    use_fake_tools(monkeypatch)
    monkeypatch.setenv("FAKE_NPU_DAMAGE", "dense/BiasAdd:0")
    ran = run_cli(capsys, "run", npu.model.path, "--input", npu.bins.root, "-o", tmp_path / "out", "--dump")
    assert ran.code == 0, ran.err
    [run_folder] = (tmp_path / "out").iterdir()
    outcome = run_cli(capsys, "compare", npu.model.path, "--input", npu.bins.root, "--npu-dump",
                      run_folder / "dump", "--report", tmp_path / "report")
    assert outcome.code == 1  # the outputs fail: the broken layer reaches them
    assert ("first tensor to diverge: dense/BiasAdd:0 (BiasAdd), NPU op dense/MatMul (MatMulV2) fusing "
            "dense/MatMul, dense/BiasAdd") in outcome.out
    assert "fed to TensorFlow from the NPU dump (the device's random draws): noise:0" in outcome.out
    assert f"layer by layer, batch 000000 (dumped by infer run --dump: {run_folder / 'run.json'})" in outcome.out
    with open(tmp_path / "report" / "report.csv", newline="") as handle:
        rows = {row[5]: row for row in csv.reader(handle)}
    assert rows["dense/BiasAdd"][2] == DENSE_OP and rows["relu"][2] == "conv/Conv2D"  # the NPUDump column
    assert "first to diverge" in rows["dense/BiasAdd"][-1]


def test_compare_without_actual_needs_a_dump_a_run_recorded(npu: Npu, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    dump = npu.dump(tmp_path / "dump")
    outcome = run_cli(capsys, "compare", npu.model.path, "--input", npu.bins.root, "--npu-dump", dump)
    assert outcome.code == 2
    assert outcome.error_line == f"error: --actual: missing, and no run.json above --npu-dump {dump} records it"
    outcome = run_cli(capsys, "compare", npu.model.path, "--input", npu.bins.root)
    assert outcome.error_line == "error: --actual: missing: the converted model's run folder is needed"
