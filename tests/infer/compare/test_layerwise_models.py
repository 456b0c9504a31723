"""--layerwise on small converted models built for one situation each: a name tf2onnx gave to another partial
sum, tensors computed from a random op, a final transpose the conversion dropped, an fp16 underflow into log."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from atc_wrap.precision.modes import PrecisionMode
from binio.binfile import write_bin
from binio.manifest import BinEntry, DatasetManifest, InputManifest, bin_file_name
from infer.compare._compare import CompareOptions, CompareResult, compare
from infer.contract import ModelContract
from infer.run import run_model
from infer.run.options import RunOptions
from tests.builders.bins import write_bins
from tests.builders.frozen import write_frozen
from tests.cli import run_cli
from tests.infer.compare.corpus import edited_copy

pytestmark = pytest.mark.slow


def _converted(folder: Path, build: Any, inputs: tuple[str, ...], outputs: tuple[str, ...],
               mode: PrecisionMode = "force_fp32", soc: str = "") -> ModelContract:
    from infer.convert._convert import ConvertOptions, convert_model

    frozen = write_frozen(folder, build, inputs, outputs)
    return convert_model(frozen, ConvertOptions(target="onnx", precision_mode=mode, soc_version=soc)).contract


def _layerwise(contract: ModelContract, bins: Path, out: Path) -> CompareResult:
    actual = run_model(contract.path, bins, out, RunOptions(backend="onnxrt")).folder
    return compare(contract.path, bins, actual, options=CompareOptions(layerwise=True), cache_root=out / "golden-cache")


def _producer(model: Any, tensor: str) -> Any:
    return next(node for node in model.graph.node if tensor in node.output)


def build_sum(tf: Any) -> None:
    """sum2 = (a + b) + c, three branches of x."""
    x = tf.compat.v1.placeholder(tf.float32, [2, 8], name="x")
    a = tf.multiply(x, 2.0, name="a")
    b = tf.add(x, 1.0, name="b")
    c = tf.tanh(x, name="c")
    tf.add(tf.add(a, b, name="sum1"), c, name="sum2")


def test_a_name_on_another_partial_sum_is_unmatched_with_the_reason(tmp_path: Path) -> None:
    """As tf2onnx did on BERT's embeddings: the name sum1 lands on b + c, the total is still right."""
    converted = _converted(tmp_path / "sum", build_sum, ("x:0",), ("sum2:0",))

    def reorder(model: Any) -> None:
        first, total = _producer(model, "sum1:0"), _producer(model, "sum2:0")
        del first.input[:]
        first.input.extend(["b:0", "c:0"])
        del total.input[:]
        total.input.extend(["a:0", "sum1:0"])

    contract = edited_copy(converted, tmp_path / "reordered", reorder)
    result = _layerwise(contract, write_bins(tmp_path / "bins", "x:0", (2, 8)), tmp_path / "out")
    assert result.passed and result.layerwise is not None
    rows = {row.tensor: row for row in result.layerwise.rows}
    assert not rows["sum1:0"].matched
    assert rows["sum1:0"].unmatched_reason.startswith(
        "another computation: ONNX computes it from b:0, c:0, TensorFlow from a:0, b:0")
    assert rows["sum2:0"].matched and rows["sum2:0"].match == "op and inputs" and not rows["sum2:0"].failures
    assert result.layerwise.diverges_at is None and result.layerwise.note == ""


def build_noisy(tf: Any) -> None:
    """out = h + 0 * (h * uniform noise): the noise branch is random, the output's value is not."""
    x = tf.compat.v1.placeholder(tf.float32, [2, 8], name="x")
    h = tf.nn.relu(x, name="h")
    noisy = tf.multiply(h, tf.random.uniform([2, 8], name="noise"), name="noisy")
    tf.add(h, tf.multiply(noisy, 0.0, name="silenced"), name="out")


def test_tensors_from_random_ops_are_never_compared_and_named(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                              ) -> None:
    contract = _converted(tmp_path / "noisy", build_noisy, ("x:0",), ("out:0",))
    bins = write_bins(tmp_path / "bins", "x:0", (2, 8))
    result = _layerwise(contract, bins, tmp_path / "out")
    layers = result.layerwise
    assert layers is not None
    assert [row.tensor for row in layers.skipped_random] == ["noisy:0", "silenced:0", "out:0"]
    assert all(row.random_source == "noise/RandomUniform" and not row.matched for row in layers.skipped_random)
    assert [row.tensor for row in layers.matched] == ["h:0"]
    actual = result.actual_dir
    outcome = run_cli(capsys, "compare", contract.path, "--input", bins, "--actual", actual, "--layerwise")
    assert "not compared (computed from random ops): noisy:0, silenced:0, out:0" in outcome.out


def build_feature_map(tf: Any) -> None:
    """A (2,4,4,4) feature map as the output: H, W and C equal, so either layout has its shape."""
    x = tf.compat.v1.placeholder(tf.float32, [2, 4, 4, 3], name="x")
    kernel = tf.constant(np.random.default_rng(3).normal(size=(3, 3, 3, 4)).astype(np.float32))
    tf.nn.relu(tf.nn.conv2d(x, kernel, 1, "SAME"), name="features")


def test_a_dropped_final_transpose_fails_layer_by_layer_too(tmp_path: Path) -> None:
    """The output is compared as the model gives it, NCHW here: the layer view must not undo the bug."""
    converted = _converted(tmp_path / "fm", build_feature_map, ("x:0",), ("features:0",))

    def drop_final_transpose(model: Any) -> None:
        final = _producer(model, "features:0")
        assert final.op_type == "Transpose"
        _producer(model, final.input[0]).output[0] = "features:0"
        model.graph.node.remove(final)

    contract = edited_copy(converted, tmp_path / "dropped", drop_final_transpose)
    result = _layerwise(contract, write_bins(tmp_path / "bins", "x:0", (2, 4, 4, 3)), tmp_path / "out")
    assert not result.passed and result.layerwise is not None
    first = result.layerwise.diverges_at
    assert first is not None and first.tensor == "features:0"
    assert first.metrics is not None and first.metrics.cosine_similarity < 0.9
    assert "which is NCHW (the converter's): a transpose back to TensorFlow's layout is missing" in first.layout
    assert [r.tensor for r in result.layerwise.rows if r.diverges_here] == ["features:0"]


def build_log_power(tf: Any) -> None:
    """out = 0.5 * log(x*x + 1e-10): the eps is below fp16's smallest subnormal, so x = 0 gives log(0)."""
    x = tf.compat.v1.placeholder(tf.float32, [2, 64], name="x")
    power = tf.add(tf.square(x, name="square"), 1e-10, name="power")
    tf.multiply(tf.math.log(power, name="logpower"), 0.5, name="out")


def test_fp16_underflow_into_log_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    contract = _converted(tmp_path / "log", build_log_power, ("x:0",), ("out:0",), mode="force_fp16")
    values = np.random.default_rng(0).normal(size=(2, 64)).astype(np.float32)
    values[:, ::8] = 0.0  # silence, as in an audio frame
    entry = BinEntry(bin_file_name(0), write_bin(tmp_path / "bins" / "x" / bin_file_name(0), values), 2)
    DatasetManifest(root=tmp_path / "bins", batch=2, samples=2,
                    inputs=(InputManifest("x:0", "x", "float32", (2, 64), "ND", (entry,)),)).save()
    result = _layerwise(contract, tmp_path / "bins", tmp_path / "out")
    assert not result.passed and result.layerwise is not None
    finding = result.layerwise.nonfinite
    assert finding is not None and (finding.tensor, finding.op_type, finding.cause) == ("logpower:0", "Log",
                                                                                        "underflow")
    assert finding.count == 16 and "its input power:0 (AddV2)" in finding.detail
    # The advice must be true: keeping the Log alone in fp32 leaves the Add that stores the eps in fp16, so the same
    # underflow stays (the remedy names both ops).
    keep = tmp_path / "keep.cfg"
    keep.write_text("logpower\n")
    frozen = write_frozen(tmp_path / "log_kept", build_log_power, ("x:0",), ("out:0",))
    from infer.convert._convert import ConvertOptions, convert_model

    kept = convert_model(frozen, ConvertOptions(target="onnx", precision_mode="force_fp16", keep_dtype=keep)).contract
    still = _layerwise(kept, tmp_path / "bins", tmp_path / "out_kept").layerwise
    assert still is not None and still.nonfinite is not None and still.nonfinite.cause == "underflow"
    outcome = run_cli(capsys, "compare", contract.path, "--input", tmp_path / "bins", "--actual", result.actual_dir,
                      "--layerwise")
    assert "first inf/NaN: logpower:0 (Log): 16 inf/NaN where TensorFlow is finite; underflow: " in outcome.out
    table_row = next(line for line in outcome.out.splitlines() if line.startswith("out:0 "))
    assert "underflow" in table_row and "overflow" not in table_row


def build_two_failures(tf: Any) -> None:
    """Two outputs, each with its own fp16 failure: logs = log(x*x + 1e-10) underflows (first in graph order),
    scaled = log(exp(8x)) overflows inside (exp(11.1) is past 65504) while TF's output stays small."""
    x = tf.compat.v1.placeholder(tf.float32, [2, 64], name="x")
    power = tf.add(tf.square(x, name="square"), 1e-10, name="power")
    tf.multiply(tf.math.log(power, name="logpower"), 0.5, name="logs")
    tf.math.log(tf.exp(tf.multiply(x, 8.0), name="big"), name="scaled")


def test_each_outputs_fp16_cause_comes_from_its_own_branch(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    contract = _converted(tmp_path / "two", build_two_failures, ("x:0",), ("logs:0", "scaled:0"), mode="force_fp16")
    values = np.random.default_rng(0).normal(size=(2, 64)).astype(np.float32)
    values[:, ::8] = 0.0
    entry = BinEntry(bin_file_name(0), write_bin(tmp_path / "bins" / "x" / bin_file_name(0), values), 2)
    DatasetManifest(root=tmp_path / "bins", batch=2, samples=2,
                    inputs=(InputManifest("x:0", "x", "float32", (2, 64), "ND", (entry,)),)).save()
    result = _layerwise(contract, tmp_path / "bins", tmp_path / "out")
    layers = result.layerwise
    assert layers is not None and layers.nonfinite is not None and layers.nonfinite.cause == "underflow"
    causes = {name: (f.tensor, f.cause) for name, f in layers.nonfinite_by_output.items()}
    assert causes == {"logs:0": ("logpower:0", "underflow"), "scaled:0": ("big:0", "overflow")}
    outcome = run_cli(capsys, "compare", contract.path, "--input", tmp_path / "bins", "--actual", result.actual_dir,
                      "--layerwise", "--report", tmp_path / "report")
    table = outcome.out.split("layer by layer, batch ")[0]  # the output table, not the layer rows of the same names
    rows = {line.split()[0]: line for line in table.splitlines() if line.startswith(("logs:0 ", "scaled:0 "))}
    assert "underflow" in rows["logs:0"] and "overflow" not in rows["logs:0"]
    assert "overflow" in rows["scaled:0"] and "underflow" not in rows["scaled:0"]
    import json

    report = json.loads((tmp_path / "report" / "report.json").read_text())
    assert [o["fp16"] for o in report["outputs"]] == ["underflow", "overflow"]
    page = (tmp_path / "report" / "report.html").read_text()
    assert "<td>underflow</td>" in page and "<td>overflow</td>" in page


def build_normalised(tf: Any) -> None:
    """out = x / sqrt(sum(x*x)): with |x| near 300 each square passes 65504, so fp16 stores the sum as inf and the
    output is all 0s: finite, and wrong."""
    x = tf.compat.v1.placeholder(tf.float32, [2, 64], name="x")
    norm = tf.sqrt(tf.reduce_sum(tf.square(x, name="square"), axis=1, keepdims=True, name="energy"), name="norm")
    tf.divide(x, norm, name="out")


def test_an_overflow_inside_a_finite_output_is_named_in_the_fp16_column(tmp_path: Path) -> None:
    from infer.compare.result import fp16_cause

    contract = _converted(tmp_path / "norm", build_normalised, ("x:0",), ("out:0",), mode="force_fp16")
    values = np.random.default_rng(0).uniform(250, 350, size=(2, 64)).astype(np.float32)
    entry = BinEntry(bin_file_name(0), write_bin(tmp_path / "bins" / "x" / bin_file_name(0), values), 2)
    DatasetManifest(root=tmp_path / "bins", batch=2, samples=2,
                    inputs=(InputManifest("x:0", "x", "float32", (2, 64), "ND", (entry,)),)).save()
    result = _layerwise(contract, tmp_path / "bins", tmp_path / "out")
    output = result.outputs[0]
    assert not result.passed and output.metrics.counts.nonfinite_actual_where_golden_finite == 0
    assert fp16_cause(output, result.layerwise).endswith(" inside")
    assert fp16_cause(output, None) == "ok"  # without --layerwise nothing says where it came from


def test_bert_like_embedding_sum_reordered_by_tf2onnx_is_unmatched(tmp_path: Path) -> None:
    """tf2onnx adds BERT's three embeddings in another order, and the name of the first partial sum lands on a
    different one; the next sum is the same again. Under force_fp16 nothing is marked: the run passes."""
    from tests.builders.frozen import freeze_by_hand
    from tests.models import BuiltModel, build_bert_like

    reference = build_bert_like(tmp_path / "ckpt")
    frozen = freeze_by_hand(BuiltModel(prefix=reference.path, inputs=reference.inputs, outputs=reference.outputs),
                            tmp_path / "frozen", batch=reference.batch)
    from infer.convert._convert import ConvertOptions, convert_model

    contract = convert_model(frozen, ConvertOptions(target="onnx", precision_mode="force_fp16")).contract
    items = []
    for name, values in reference.feeds.items():
        folder = name.split(":")[0]
        entry = BinEntry(bin_file_name(0), write_bin(tmp_path / "bins" / folder / bin_file_name(0), values),
                         reference.batch)
        items.append(InputManifest(name, folder, "int32", values.shape, "ND", (entry,)))
    DatasetManifest(root=tmp_path / "bins", batch=reference.batch, samples=reference.batch,
                    inputs=tuple(items)).save()
    result = _layerwise(contract, tmp_path / "bins", tmp_path / "out")
    assert result.passed and result.layerwise is not None
    rows = {row.tensor: row for row in result.layerwise.rows}
    assert rows["bert/add:0"].unmatched_reason.startswith("another computation: ONNX computes it from "
                                                          "bert/Gather_1:0, TensorFlow from bert/Gather:0, "
                                                          "bert/Gather_1:0")
    assert rows["bert/add_1:0"].matched and rows["bert/add_1:0"].match == "op and inputs"
    # tf2onnx splits Rsqrt into Sqrt (keeping the name) and Reciprocal: the Reciprocal is compared.
    assert rows["bert/Rsqrt:0"].matched and rows["bert/Rsqrt:0"].onnx_op == "Reciprocal"
    assert result.layerwise.diverges_at is None and result.layerwise.note == ""
    assert all(not row.failures for row in result.layerwise.matched)


def build_exp(tf: Any) -> None:
    """out = exp(x) * 1e-12 with x near 28: exp's values are near 1e12, the output's near 1."""
    x = tf.compat.v1.placeholder(tf.float32, [2, 64], name="x")
    tf.multiply(tf.exp(x, name="grown"), 1e-12, name="out")


def test_a_correct_fp32_exp_in_the_trillions_is_not_marked(tmp_path: Path) -> None:
    """ONNX Runtime's exp and TensorFlow's differ in the last fp32 bit: RMSE in the tens of thousands (msit's
    absolute rule would fail it), RED near 1e-8. Intermediate tensors are judged by relative measures."""
    from infer.compare.thresholds import Thresholds

    # Ascend910B has an fp32 Exp (Ascend310, the default chip, has fp16 only: force_fp32 leaves it in fp16 there)
    contract = _converted(tmp_path / "exp", build_exp, ("x:0",), ("out:0",), soc="Ascend910B2")
    result = _layerwise(contract, write_bins(tmp_path / "bins", "x:0", (2, 64), scale=0.5, offset=28.0),
                        tmp_path / "out")
    assert result.passed and result.layerwise is not None
    grown = next(row for row in result.layerwise.rows if row.tensor == "grown:0")
    assert grown.metrics is not None and grown.metrics.root_mean_square_error > 1.0
    assert Thresholds().failures("grown:0", grown.metrics)  # msit's rule on it: a failure
    assert grown.metrics.relative_euclidean_distance < 1e-6 and not grown.failures
    assert result.layerwise.diverges_at is None and result.layerwise.note == ""
