"""Layer-wise pieces that need no TensorFlow: layouts from the ONNX graph, reading a tensor in TF's layout, the
diagnosis over compared rows, and the causes of inf/NaN."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from infer.compare._judge.metrics import compute_metrics
from infer.compare._layers.diagnosis import diagnose, verdict_note
from infer.compare._layers.layouts import NCHW, Layout, read_in_tf_layout, shapes_of, track_layouts, unknown
from infer.compare._layers.nonfinite import NAN_FROM_INF, OVERFLOW, UNDERFLOW, TensorInfo, classify
from infer.compare._layers.onnx_graph import OnnxGraph
from infer.compare._layers.stand_in import aligned_to_golden
from infer.compare.layer_result import LayerRow
from infer.compare.result import CompareResult, OutputResult, PlotData
from infer.compare.thresholds import Failure, Thresholds


def test_known_nchw_layout_is_read_back_as_nhwc() -> None:
    golden = np.random.default_rng(0).normal(size=(2, 5, 6, 3)).astype(np.float32)
    aligned, layout = aligned_to_golden(golden, np.transpose(golden, (0, 3, 1, 2)), Layout(NCHW))
    assert aligned is not None and np.array_equal(aligned, golden) and layout == "NCHW (the converter's)"


def test_equal_h_w_c_is_read_in_the_tracked_layout_or_not_at_all() -> None:
    """(2, 4, 4, 4) fits NHWC and NCHW: the conversion's layout decides, even where the other reading would be
    closer to TensorFlow; without it, no reading is picked."""
    golden = np.random.default_rng(1).normal(size=(2, 4, 4, 4)).astype(np.float32)
    aligned, reason = aligned_to_golden(golden, np.transpose(golden, (0, 3, 1, 2)), unknown("Gather g reads it"))
    assert aligned is None and reason == "layout unknown: Gather g reads it"
    aligned, _ = aligned_to_golden(golden, golden.copy(), Layout(NCHW))
    assert aligned is not None and not np.allclose(aligned, golden)
    aligned, _ = aligned_to_golden(golden, np.transpose(golden, (0, 3, 1, 2)), Layout(NCHW))
    assert aligned is not None and np.array_equal(aligned, golden)


def test_an_unknown_layout_is_never_guessed_from_the_shape() -> None:
    """Only NCHW fits (2, 3, 5, 6) against TF's (2, 5, 6, 3), yet with the layout unknown it is not compared."""
    golden = np.zeros((2, 5, 6, 3), dtype=np.float32)
    aligned, reason = aligned_to_golden(golden, np.zeros((2, 3, 5, 6), dtype=np.float32), unknown("why"))
    assert aligned is None and reason == "layout unknown: why"
    aligned, reason = aligned_to_golden(golden, np.zeros((2, 3, 5, 6), dtype=np.float32), None)
    assert aligned is None and reason.startswith("layout unknown: ")


def test_a_layout_that_does_not_fit_the_shape_says_so_without_contradiction() -> None:
    """The line the issue quotes said 'shape [8,8,62,62] in ONNX (as TensorFlow), [8,62,62,8] in TensorFlow'."""
    golden = np.zeros((8, 62, 62, 8), dtype=np.float32)
    aligned, reason = aligned_to_golden(golden, np.zeros((8, 8, 62, 62), dtype=np.float32), Layout((0, 1, 2, 3)))
    assert aligned is None
    assert reason == ("shape [8, 8, 62, 62] in ONNX does not hold TensorFlow's [8, 62, 62, 8] in the layout tracked "
                      "for it (as TensorFlow, which would hold [8, 8, 62, 62])")


def test_size_1_axes_are_free_in_a_reading() -> None:
    """A 1-channel NHWC tensor held as NCHW, and one whose size-1 axis lies elsewhere: the values are the same."""
    golden = np.random.default_rng(4).normal(size=(2, 5, 6, 1)).astype(np.float32)
    for perm in ((0, 3, 1, 2), (0, 1, 3, 2)):
        held = np.transpose(golden, perm)
        aligned = read_in_tf_layout((2, 5, 6, 1), held, perm)
        assert aligned is not None and np.array_equal(aligned, golden)
    swapped = np.transpose(golden, (0, 2, 1, 3))  # H and W swapped: non-1 axes out of TF's order
    aligned = read_in_tf_layout((2, 5, 6, 1), swapped, (0, 2, 1, 3))
    assert aligned is not None and np.array_equal(aligned, golden)
    assert read_in_tf_layout((2, 5, 6, 1), swapped, (0, 1, 2, 3)) is None


def test_a_model_output_is_compared_as_the_model_gives_it() -> None:
    """A final transpose the conversion dropped is a bug in the output, not a layout to undo."""
    golden = np.random.default_rng(2).normal(size=(2, 4, 4, 4)).astype(np.float32)
    aligned, layout = aligned_to_golden(golden, np.transpose(golden, (0, 3, 1, 2)), Layout(NCHW), as_is=True)
    assert aligned is not None and not np.allclose(aligned, golden)
    assert "a transpose back to TensorFlow's layout is missing" in layout


def _onnx_graph(nodes: list[tuple[str, list[str], list[str], dict[str, Any]]]) -> tuple[OnnxGraph, dict[str, Any]]:
    import onnx
    from onnx import TensorProto, helper

    made = [helper.make_node(op, inputs, outputs, name=f"n{i}", **attrs) for i, (op, inputs, outputs, attrs)
            in enumerate(nodes)]
    shape = helper.make_tensor("shape", TensorProto.INT64, [2], [2, 48])
    graph = helper.make_graph(made, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4, 4, 3])],
                              [helper.make_tensor_value_info(nodes[-1][2][0], TensorProto.FLOAT, None)],
                              initializer=[shape])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    return OnnxGraph(model), shapes_of(onnx.shape_inference.infer_shapes(model))


def test_layouts_follow_the_conversion_transposes() -> None:
    graph, shapes = _onnx_graph([
        ("Transpose", ["x"], ["to_nchw"], {"perm": [0, 3, 1, 2]}),
        ("Relu", ["to_nchw"], ["relu"], {}),
        ("Cast", ["relu"], ["rounded"], {"to": 1}),
        ("Transpose", ["rounded"], ["back"], {"perm": [0, 2, 3, 1]}),
        ("ReduceMean", ["relu"], ["pooled"], {"axes": [2, 3], "keepdims": 0}),
        ("Reshape", ["relu", "shape"], ["flat"], {}),
    ])
    layouts = {name: layout.perm for name, layout in track_layouts(graph, shapes).items()}
    assert layouts["x"] == (0, 1, 2, 3)
    assert layouts["relu"] == layouts["rounded"] == (0, 3, 1, 2)
    assert layouts["back"] == (0, 1, 2, 3)
    assert layouts["pooled"] == (0, 1)  # NCHW reduced over H, W: (N, C), TF's order
    assert layouts["flat"] is None  # a permuted tensor reshaped: nothing says how TF's axes lie
    computing = graph.computing_node("back")  # through the transpose and the cast
    assert computing is not None and computing.op_type == "Relu"


def _row(name: str, red: float, thresholds: Thresholds = Thresholds()) -> LayerRow:
    golden = np.linspace(1.0, 2.0, 64)
    actual = golden + red * np.linalg.norm(golden) / 8.0 * np.cos(np.arange(64))
    metrics = compute_metrics(actual, golden, atol=1e-4, rtol=1e-3)
    return LayerRow(tensor=name, op_type="Op", dtype="float32", shape=(64,), metrics=metrics,
                    failures=thresholds.failures(name, metrics), match="op and inputs")


def test_first_diverging_is_where_the_error_enters_not_the_first_failure_listed() -> None:
    """b fails because a (upstream) fails: the origin is a; c, on another branch, fails on its own."""
    inputs_of = {"a:0": ("x:0",), "b:0": ("a:0",), "c:0": ("x:0",), "d:0": ("b:0", "c:0")}
    rows = [_row("a:0", 0.2), _row("b:0", 0.3), _row("c:0", 0.1), _row("d:0", 0.35)]
    marked, origins, growth = diagnose(rows, inputs_of)
    assert origins == ("a:0", "c:0")
    assert [r.tensor for r in marked if r.diverges_here] == ["a:0"]  # exactly one marked
    assert growth == "a:0"
    by_name = {r.tensor: r for r in marked}
    b_metrics, a_metrics = by_name["b:0"].metrics, by_name["a:0"].metrics
    assert b_metrics is not None and a_metrics is not None
    assert by_name["b:0"].error_growth == pytest.approx(
        b_metrics.relative_euclidean_distance / a_metrics.relative_euclidean_distance)


def test_an_unmatched_tensor_between_two_compared_ones_is_walked_through() -> None:
    inputs_of = {"a:0": ("x:0",), "fused:0": ("a:0",), "b:0": ("fused:0",)}
    unmatched = LayerRow(tensor="fused:0", op_type="Op", dtype="float32", shape=(), metrics=None, failures=(),
                         unmatched_reason="not in the ONNX model")
    marked, origins, _ = diagnose([_row("a:0", 0.0), unmatched, _row("b:0", 0.5)], inputs_of)
    assert origins == ("b:0",) and [r.tensor for r in marked if r.diverges_here] == ["b:0"]


def _outcome(failing_metric: str, *, failing_sample: bool = False) -> CompareResult:
    """A comparison of one output, `out:0`, failing on `failing_metric` (passing when it is empty), or on one
    sample's cosine with the per-sample check asked to fail the run."""
    metrics = compute_metrics(np.ones(4), np.ones(4), atol=1e-4, rtol=1e-3)
    failures = (Failure("out:0", failing_metric, 2.0, 1.0),) if failing_metric else ()
    output = OutputResult(index=0, name="out:0", actual_dtype="float32", golden_dtype="float32", shape=(4,),
                          metrics=metrics, limits={}, failures=failures, batches=(), worst_samples=(), topk=None,
                          plot=PlotData((), (), 0, 0, (), ()),
                          failing_samples=(2,) if failing_sample else (),
                          worst_failing=Failure("out:0", "CosineSimilarity", 0.9, 0.99) if failing_sample else None)
    return CompareResult(contract="", dataset="", actual_dir="", golden_dir="", golden_source="given", samples=4,
                         padding=0, outputs=(output,), per_sample_asked=failing_sample)


def test_verdict_note_warns_in_a_passed_run_and_explains_an_unmarked_failure() -> None:
    from dataclasses import replace

    passed = _outcome(failing_metric="")
    first = replace(_row("a:0", 0.2), diverges_here=True)
    assert verdict_note(first, passed, [first], "000000").startswith("warning: the outputs pass, but a:0 (Op)")
    failed = _outcome(failing_metric="RootMeanSquareError")
    output = failed.outputs[0].name
    note = verdict_note(None, failed, [_row(output, 0.0)], "000000")
    assert note.startswith(f"no tensor marked: {output} fails only on RootMeanSquareError")
    assert verdict_note(None, failed, [], "000000").startswith(f"no tensor marked: {output} fails")
    per_sample = _outcome(failing_metric="", failing_sample=True)
    assert not per_sample.passed
    assert verdict_note(None, per_sample, [_row(output, 0.0)], "000001").startswith(
        "no tensor marked: the run fails on out:0 CosineSimilarity 0.9 < 0.99 (1 of 4 samples fail on their own), "
        "and no compared tensor of batch 000001 breaks")


def _info(**ops: tuple[str, tuple[str, ...]]) -> dict[str, TensorInfo]:
    return {f"{name}:0": TensorInfo(op, tuple(f"{i}:0" for i in inputs)) for name, (op, inputs) in ops.items()}


def test_overflow_underflow_and_nan_from_inf_are_told_apart() -> None:
    info = _info(square=("Square", ("x",)), eps=("AddV2", ("square",)), log=("Log", ("eps",)),
                 sub=("Sub", ("big", "big2")), big=("Mul", ("x",)), big2=("Mul", ("x",)))
    golden = {"square:0": np.array([70000.0, 4.0], np.float32), "eps:0": np.array([1e-10, 1.0], np.float32),
              "log:0": np.log(np.array([1e-10, 1.0], np.float32)), "sub:0": np.array([1.0, 0.0], np.float32),
              "big:0": np.array([1.0, 2.0], np.float32), "big2:0": np.array([0.0, 2.0], np.float32)}
    everything = lambda name: True  # noqa: E731
    overflow = classify("square:0", np.array([np.inf, 4.0]), golden, info, everything)
    assert overflow.cause == OVERFLOW and overflow.count == 1 and overflow.at_tensor == "square:0"
    underflow = classify("log:0", np.array([-np.inf, 0.0]), golden, info, everything)
    assert underflow.cause == UNDERFLOW and underflow.at_tensor == "log:0"
    assert "its input eps:0 (AddV2)" in underflow.detail
    assert "keep the op that makes the tiny input in fp32 as well as this one" in underflow.describe()
    # The Log was fused away (not compared): the next compared tensor's inf is traced back to it.
    downstream = _info(**{"scaled": ("Mul", ("log",))}) | info
    golden["scaled:0"] = golden["log:0"] * 2
    traced = classify("scaled:0", np.array([-np.inf, 0.0]), golden, downstream, lambda name: name != "log:0")
    assert traced.cause == UNDERFLOW and traced.at_tensor == "log:0" and traced.at_op == "Log"
    nan = classify("sub:0", np.array([np.nan, 0.0]), golden, info, everything)
    assert nan.cause == NAN_FROM_INF
