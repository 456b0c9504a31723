"""The precision plan of small TF1 graphs, per chip and mode, against what the committed operator tables say
(docs/precision-plan.md): each op's dtype, where it runs, which rule gave it, and what ATC would refuse."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from atc_wrap.errors import ConvertError
from atc_wrap.precision.modes import PRECISION_MODES, PrecisionMode
from atc_wrap.precision.op_controls import OpControls, OpEntries, parse_customize_dtypes, parse_modify_mixlist
from atc_wrap.precision.op_tables import load_op_table, op_table_for
from atc_wrap.precision.plan import PrecisionPlan, plan_precision, refuse_planned
from binio.fields import Fields
from tests.builders.graphs import graph_of as _graph


def build_cnn(tf: Any) -> None:
    """conv -> bias -> relu -> maxpool -> mean -> exp, and a dense head with softmax: one op of each kind."""
    x = tf.compat.v1.placeholder(tf.float32, [2, 8, 8, 3], name="x")
    kernel = tf.constant(np.ones((3, 3, 3, 4), np.float32))
    conv = tf.nn.conv2d(x, kernel, 1, "SAME", name="conv")
    relu = tf.nn.relu(tf.nn.bias_add(conv, tf.constant(np.ones(4, np.float32)), name="bias"), name="relu")
    pooled = tf.reduce_mean(tf.nn.max_pool2d(relu, 2, 2, "SAME", name="pool"), axis=[1, 2], name="mean")
    tf.exp(pooled, name="exp")
    tf.nn.softmax(tf.matmul(pooled, tf.constant(np.ones((4, 5), np.float32)), name="logits"), name="probs")


def build_odd_ops(tf: Any) -> None:
    """An op ATC runs on AI CPU only (Igamma) and one its TF parser does not map (Lgamma)."""
    x = tf.compat.v1.placeholder(tf.float32, [2, 4], name="x")
    tf.math.igamma(x, x, name="igamma")
    tf.math.lgamma(x, name="lgamma")


@pytest.fixture(scope="module")
def cnn() -> Any:
    return _graph(build_cnn)


def _plan(graph_def: Any, mode: PrecisionMode, chip: str = "Ascend310", **kwargs: Any) -> PrecisionPlan:
    return plan_precision(graph_def, op_table_for(chip), mode, chip=chip, **kwargs)


def _dtypes(plan: PrecisionPlan) -> dict[str, str]:
    return {entry.node: entry.dtype for entry in plan.ops}


F16, F32, MIXED = "float16", "float32", "float16->float32"
# Each op of build_cnn on Ascend310, per mode, as the rules read its table: Conv2D's op_select_format gives fp16 only
# there (conv2d.py: "Ascend310 ... cannot support fp32 out"), MatMulV2's fp16, fp16 -> fp32 and fp32, SoftmaxV2's
# fp16 and fp32; BiasAdd's asks the chip something the snapshot does not say (unknown: planned as the mode prefers);
# MaxPool and Exp have fp16 kernels only; ReduceMeanD (TF Mean's rewrite) is black-listed; Conv2D and MatMulV2
# white, the rest gray.
EXPECTED_310 = {
    "force_fp16": dict(conv=F16, bias=F16, relu=F16, pool=F16, mean=F16, exp=F16, logits=F16, probs=F16),
    "allow_fp32_to_fp16": dict(conv=F16, bias=F32, relu=F32, pool=F16, mean=F32, exp=F16, logits=F16, probs=F32),
    "force_fp32": dict(conv=F16, bias=F32, relu=F32, pool=F16, mean=F32, exp=F16, logits=MIXED, probs=F32),
    "must_keep_origin_dtype": dict(conv=F32, bias=F32, relu=F32, pool=F32, mean=F32, exp=F32, logits=F32,
                                   probs=F32),
    "allow_mix_precision": dict(conv=F16, bias=F16, relu=F16, pool=F16, mean=F32, exp=F16, logits=F16, probs=F16),
}


def test_the_tables_say_what_the_expectations_assume() -> None:
    table = load_op_table("ascend310")
    assert table.lookup("Exp").kernel.input_dtypes == {"float16"}  # type: ignore[union-attr]
    assert table.lookup("MaxPool").kernel.input_dtypes == {"float16"}  # type: ignore[union-attr]
    mean = table.lookup("Mean").kernel
    assert mean is not None and (mean.op, mean.precision_reduce) == ("ReduceMeanD", False)
    conv, bias = table.lookup("Conv2D").kernel, table.lookup("BiasAdd").kernel
    assert conv is not None and conv.from_select_format and conv.pairs == {("float16", "float16")}
    assert bias is not None and bias.dynamic_format and bias.input_dtypes is None
    assert table.lookup("MatMul").kernel.pairs == {  # type: ignore[union-attr]
        ("float16", "float16"), ("float16", "float32"), ("float32", "float32")}
    assert table.lookup("Softmax").kernel.input_dtypes == {"float16", "float32"}  # type: ignore[union-attr]
    assert load_op_table("ascend910").lookup("Exp").kernel.input_dtypes == {"float16", "float32"}  # type: ignore


@pytest.mark.parametrize("mode", PRECISION_MODES)
def test_each_op_gets_the_dtype_the_mode_and_the_table_give_it(cnn: Any, mode: PrecisionMode) -> None:
    plan = _plan(cnn, mode)
    assert _dtypes(plan) == EXPECTED_310[mode]
    assert (plan.chip, plan.family, plan.table_date, plan.precision_mode) == ("Ascend310", "ascend310", "2022-06-29",
                                                                              mode)
    # Where the mode's preferred dtype was not the one the chip has, the table decided, and says why.
    for entry in plan.ops:
        if mode in ("force_fp32", "allow_fp32_to_fp16") and entry.node in ("pool", "exp"):
            assert entry.decided_by == "table" and "no fp32 kernel" in entry.why, entry
    by_node = {entry.node: entry for entry in plan.ops}
    assert by_node["mean"].ascend_op == "ReduceMeanD" and by_node["logits"].ascend_op == "MatMulV2"
    assert by_node["conv"].matrix and by_node["logits"].matrix and not by_node["relu"].matrix


def test_an_op_fp16_only_on_one_chip_and_both_on_another_gets_another_plan(cnn: Any) -> None:
    for mode in ("force_fp32", "allow_fp32_to_fp16"):
        on_310 = {e.node: e for e in _plan(cnn, mode, "Ascend310").ops}["exp"]
        assert (on_310.dtype, on_310.kernel_dtypes) == (F16, ("float16",))
        for chip in ("Ascend310P3", "Ascend910A", "Ascend910B2"):
            other = {e.node: e for e in _plan(cnn, mode, chip).ops}["exp"]
            assert (other.dtype, other.decided_by, other.kernel_dtypes) == (F32, "mode", ("float16", "float32"))


def test_allow_mix_precision_reads_each_chips_lists(cnn: Any) -> None:
    """ReduceMeanD is black on Ascend310 and gray on Ascend310P: the same mean is fp32 on one, fp16 (after the fp16
    pool) on the other; a gray op after it follows what it became."""
    on_310 = _dtypes(_plan(cnn, "allow_mix_precision", "Ascend310"))
    on_310p = _dtypes(_plan(cnn, "allow_mix_precision", "Ascend310P3"))
    assert (on_310["mean"], on_310p["mean"]) == (F32, F16)
    # Exp is gray: after the fp32 mean it would be fp32, but Ascend310 has fp16 only; Ascend310P has both.
    assert (on_310["exp"], on_310p["exp"]) == (F16, F16)
    on_910 = {e.node: e for e in _plan(cnn, "allow_mix_precision", "Ascend910A").ops}
    assert (on_910["mean"].mix_list, on_910["exp"].dtype) == ("black", F32)


def test_a_gray_op_fed_by_the_models_fp16_input_is_fp16() -> None:
    def build(tf: Any) -> None:
        x = tf.compat.v1.placeholder(tf.float32, [2, 4], name="x")
        tf.nn.relu(x, name="relu")

    graph_def = _graph(build)
    assert _dtypes(_plan(graph_def, "allow_mix_precision")) == {"relu": F32}  # the fp32 input: undocumented, fp32
    assert _dtypes(_plan(graph_def, "allow_mix_precision", fp16_inputs={"x"})) == {"relu": F16}


def test_ops_off_ai_core_run_in_their_own_dtype_and_unknown_ones_fall_back() -> None:
    plan = _plan(_graph(build_odd_ops), "force_fp16")
    igamma, lgamma = plan.ops
    assert (igamma.engine, igamma.dtype, igamma.decided_by, igamma.ascend_op) == ("aicpu", F32, "table", "Igamma")
    assert (lgamma.engine, lgamma.dtype, lgamma.decided_by, lgamma.legacy) == ("none", "", "fallback", True)
    assert "no mapping in ATC's TF parser" in lgamma.why
    assert plan.op_precision()["lgamma"].compute == "legacy" and plan.op_precision()["igamma"].compute == "fp32"
    assert any("not placed by the table" in line and "lgamma (Lgamma)" in line for line in plan.summary())


def test_a_kernel_whose_dtypes_are_unknown_is_planned_as_the_mode_prefers_and_said(cnn: Any) -> None:
    bias = {e.node: e for e in _plan(cnn, "must_keep_origin_dtype").ops}["bias"]
    assert bias.kernel_dtypes is None and bias.dtype == F32 and not bias.refused
    assert bias.why.endswith("(its kernel's dtypes are unknown: op_select_format does not decide them on ascend310: "
                             "planned as the mode prefers, unconfirmed)")
    # A kernel op_select_format decides is no longer taken as both: Conv2D has no fp32 on Ascend310, so
    # force_fp32 leaves it fp16 and must_keep_origin_dtype cannot keep it fp32 (below), where fp16 in, fp32 out
    # is Ascend910's (the same function's other branch).
    on_310 = {e.node: e for e in _plan(cnn, "force_fp32").ops}["conv"]
    assert (on_310.dtype, on_310.kernel_dtypes, on_310.decided_by) == (F16, ("float16",), "table")
    on_910 = {e.node: e for e in _plan(cnn, "force_fp32", "Ascend910A").ops}["conv"]
    assert on_910.dtype == MIXED and _plan(cnn, "force_fp32", "Ascend910A").op_precision()["conv"].input_dtypes == (
        "float16",)


def test_an_op_whose_kernel_gives_another_dtype_out_is_planned_so() -> None:
    """ResizeBilinearV2D on Ascend310 takes fp16 or fp32 and gives fp32 (its table's columns: float,float16 in,
    float,float out); the real DD-NET om computes its resizes so (tests/atc_wrap/test_ascend_real_files.py)."""
    def build(tf: Any) -> None:
        x = tf.compat.v1.placeholder(tf.float32, [1, 4, 4, 3], name="x")
        tf.compat.v1.image.resize_bilinear(x, [8, 8], name="resize")

    for mode, fp16_inputs in (("force_fp16", set()), ("allow_mix_precision", {"x"})):  # gray: as its fp16 input
        plan = _plan(_graph(build), mode, fp16_inputs=fp16_inputs)  # type: ignore[arg-type]
        (resize,) = plan.ops
        assert (resize.ascend_op, resize.input_dtype, resize.output_dtype) == ("ResizeBilinearV2D", F16, F32)
        assert resize.decided_by == "table" and resize.why.endswith("; its kernel gives fp32 out for fp16 in")
        assert plan.op_precision()["resize"].output_dtypes == (F32,)
    (kept,) = _plan(_graph(build), "force_fp32").ops
    assert kept.dtype == F32


def test_a_cast_gives_the_dtype_it_is_asked_for_not_its_kernels_other_column() -> None:
    """Cast's kernel pairs fp16 with fp32 and fp32 with fp16 (it converts): that is no output dtype of the op's own,
    so a cast to fp32 under force_fp32 stays fp32 out (not rounded to fp16) and a cast under force_fp16 fp16."""
    def build(tf: Any) -> None:
        x = tf.compat.v1.placeholder(tf.float32, [4], name="x")
        half = tf.cast(x, tf.float16, name="to16")
        tf.cast(half * half, tf.float32, name="to32")

    cast_kernel = op_table_for("Ascend310").aicore_kernel("Cast")
    assert cast_kernel is not None and cast_kernel.outputs_for(F16) == {F32}  # the situation
    for mode, dtype in (("force_fp32", F32), ("force_fp16", F16)):
        planned = {e.node: e for e in _plan(_graph(build), mode).ops}  # type: ignore[arg-type]
        assert (planned["to16"].dtype, planned["to32"].dtype) == (dtype, dtype), mode
        assert "its kernel gives" not in planned["to32"].why


def test_the_summary_names_the_ops_off_the_modes_dtype(cnn: Any) -> None:
    lines = _plan(cnn, "force_fp32").summary()
    assert lines[0] == ("precision plan: force_fp32 on Ascend310, operator table of 2022-06-29: 8 ops on floats, "
                        "3 in fp16, 4 in fp32, 1 fp16 in, fp32 out")
    assert lines[1] == ("under force_fp32 on Ascend310, 3 ops still run in fp16: Conv2D (no fp32 kernel), "
                        "MaxPool (no fp32 kernel), Exp (no fp32 kernel)")
    assert lines[2] == ("1 op whose kernel dtypes are unknown (op_select_format does not decide them on ascend310), "
                        "planned as the mode prefers, unconfirmed: BiasAdd (fp32)")
    assumed = plan_precision(cnn, op_table_for("Ascend310"), "force_fp32", chip="Ascend310", chip_assumed=True)
    assert assumed.summary()[0].startswith("precision plan: force_fp32 on Ascend310 (assumed: no --soc-version "
                                           "given)")


def test_keep_dtype_on_an_op_without_an_fp32_kernel_is_refused_by_name(cnn: Any) -> None:
    keep = OpControls(keep_dtype=OpEntries(names=("exp", "relu")))
    with pytest.raises(ConvertError) as refused:
        refuse_planned(_plan(cnn, "force_fp16", controls=keep), allow_unsupported=False)
    assert refused.value.message == (
        "force_fp16 on Ascend310: 1 op ATC cannot build as asked: exp (Exp -> Exp): keep_dtype asks for float32, "
        "but its AI Core kernel on ascend310 computes float16 only: ATC cannot")
    kept = {e.node: e for e in refuse_planned(_plan(cnn, "force_fp16", "Ascend910A", controls=keep),
                                              allow_unsupported=False).ops}
    assert (kept["exp"].dtype, kept["exp"].decided_by, kept["relu"].dtype) == (F32, "keep_dtype", F32)
    allowed = refuse_planned(_plan(cnn, "force_fp16", controls=keep), allow_unsupported=True)
    assert {e.node: e.dtype for e in allowed.ops}["exp"] == F32 and len(allowed.allowed_unsupported) == 1
    by_type = OpControls(keep_dtype=OpEntries(types=("Exp",)))
    with pytest.raises(ConvertError, match=r"exp \(Exp -> Exp\): keep_dtype asks for float32"):
        refuse_planned(_plan(cnn, "allow_fp32_to_fp16", controls=by_type), allow_unsupported=False)


def test_must_keep_origin_dtype_is_refused_by_op_name_where_the_chip_cannot_keep_fp32(cnn: Any) -> None:
    with pytest.raises(ConvertError) as refused:
        refuse_planned(_plan(cnn, "must_keep_origin_dtype"), allow_unsupported=False)
    message = refused.value.message
    assert message.startswith("must_keep_origin_dtype on Ascend310: 3 ops ATC cannot build as asked: conv (Conv2D -> "
                              "Conv2D): must_keep_origin_dtype: no fp32 AI Core kernel")
    assert ("pool (MaxPool -> MaxPool): must_keep_origin_dtype: no fp32 AI Core kernel and none on AI CPU known to "
            "the table: ATC fails") in message
    assert "exp (Exp -> Exp)" in message and "--allow-unsupported" in (refused.value.hint or "")
    # Ascend910 has an fp32 Exp: only the fp16-only MaxPool is left, and Conv2D, whose op_select_format there
    # offers fp16 in and fp16 or fp32 out, never fp32 in.
    with pytest.raises(ConvertError, match=r": 2 ops ATC cannot build as asked: conv \(Conv2D.*; pool \(MaxPool"):
        refuse_planned(_plan(cnn, "must_keep_origin_dtype", "Ascend910A"), allow_unsupported=False)


def test_customize_dtypes_and_modify_mixlist_apply_over_the_mode(cnn: Any, tmp_path: Path) -> None:
    rules = parse_customize_dtypes("relu::InputDtype:float16,OutputDtype:float32\n", tmp_path / "c.cfg")
    plan = _plan(cnn, "force_fp16", controls=OpControls(customize=rules))
    relu = {e.node: e for e in plan.ops}["relu"]
    assert (relu.dtype, relu.decided_by) == (MIXED, "customize_dtypes")
    fp32_exp = parse_customize_dtypes("OpType::Exp:InputDtype:float32,OutputDtype:float32\n", tmp_path / "e.cfg")
    with pytest.raises(ConvertError, match="customize_dtypes asks for float32"):
        refuse_planned(_plan(cnn, "force_fp16", controls=OpControls(customize=fp32_exp)), allow_unsupported=False)
    # By the Ascend op type: ReduceMeanD off the black list is gray, and follows the fp16 pool.
    gray = parse_modify_mixlist('{"black-list": {"to-remove": ["ReduceMeanD"]}}', tmp_path / "m.json")
    mean = {e.node: e for e in _plan(cnn, "allow_mix_precision", controls=OpControls(mixlist=gray)).ops}["mean"]
    assert (mean.mix_list, mean.dtype, mean.decided_by) == ("gray", F16, "modify_mixlist")


def test_the_plan_reads_back_as_written(cnn: Any, tmp_path: Path) -> None:
    plan = _plan(cnn, "force_fp32", chip_assumed=True)
    read = PrecisionPlan.from_fields(Fields(plan.to_json(), path=tmp_path / "model.json",
                                            entry="converted.precision_plan", error=ConvertError))
    assert read == plan
    document = plan.to_json()
    document["format"] = 2
    with pytest.raises(ConvertError, match=r"converted.precision_plan.format: expected precision plan format 1"):
        PrecisionPlan.from_fields(Fields(document, path=tmp_path / "model.json", entry="converted.precision_plan",
                                         error=ConvertError))
