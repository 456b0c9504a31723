"""The committed operator tables: what they say about the ops that matter, where they come from, and the loader."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from atc_wrap.errors import ConvertError
from atc_wrap.precision import op_tables
from atc_wrap.precision.op_tables import (
    COMMON,
    FAMILIES,
    OpTable,
    OpTableError,
    family_of,
    load_op_table,
    op_table_for,
    parse_op_table,
)
from scripts.build_op_tables import dump

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "atc_wrap" / "precision" / "op_tables_data"
OPS_COMMIT = "81cc87458bbb25f6e812ab400fea2bfe43a82fef"  # CANN's operator repository, 2022-06-29
PARSER_COMMIT = "713bcb07699e54feadcaf0e84242a059413a6f3b"  # Ascend/parser, master on the same day
FOUR = ("ascend310", "ascend310p", "ascend910", "ascend910b")


def table(family: str) -> OpTable:
    return load_op_table(family)


def input_dtypes(family: str, tf_type: str) -> frozenset[str] | None:
    kernel = table(family).lookup(tf_type).kernel
    assert kernel is not None, f"{tf_type} has no AI Core kernel on {family}"
    return kernel.input_dtypes


@pytest.mark.parametrize("tf_type", ["Exp", "Elu", "Min", "ArgMax"])
def test_fp16_only_on_ascend310_but_fp32_too_on_the_others(tf_type: str) -> None:
    assert input_dtypes("ascend310", tf_type) == {"float16"}
    for family in ("ascend310p", "ascend910", "ascend910b"):
        assert input_dtypes(family, tf_type) == {"float16", "float32"}, family


@pytest.mark.parametrize("tf_type", ["MaxPool", "AvgPool", "TopKV2"])
def test_fp16_only_everywhere(tf_type: str) -> None:
    for family in FAMILIES:
        assert input_dtypes(family, tf_type) == {"float16"}, family


def test_static_rewrites_reach_the_d_variant_the_ai_core_table_lists() -> None:
    mean = table("ascend310").lookup("Mean")
    assert dict(mean.ascend_ops) == {"ReduceMean": "TVM"} and dict(mean.rewrites) == {"ReduceMean": "ReduceMeanD"}
    assert mean.kernel is not None and mean.kernel.op == "ReduceMeanD"
    top_k = table("ascend910").lookup("TopKV2")  # by a pass of its own (top_k_fusion_pass.cc), not const2attr
    assert top_k.kernel is not None and top_k.kernel.op == "TopKD"
    # a chip whose table lacks the D variant keeps the op's own kernel
    arg_max = table("ascend910b").lookup("ArgMax")
    assert arg_max.kernel is not None and arg_max.kernel.op == "ArgMaxV2"


def test_conv2d_dtypes_are_its_op_select_formats() -> None:
    # Conv2D's dtypes come from its op_select_format (dynamicFormat.flag=true), read off conv2d.py by
    # scripts/build_op_tables.py: Ascend310 has no fp32 out ("Ascend310 ... cannot support fp32 out"), 310P and 910
    # give fp16 in with fp16 or fp32 out, the fixpipe chips (910B, 310B) go to util_conv2d.v220_gen_param.
    expected = {"ascend310": {("float16", "float16")},
                "ascend310p": {("float16", "float16"), ("float16", "float32")},
                "ascend910": {("float16", "float16"), ("float16", "float32")},
                "ascend910b": {("bfloat16", "bfloat16"), ("float16", "float16"), ("float32", "float32")},
                "ascend310b": {("bfloat16", "bfloat16"), ("float16", "float16"), ("float32", "float32")}}
    for family, pairs in expected.items():
        kernel = table(family).lookup("Conv2D").kernel
        assert kernel is not None and kernel.dynamic_format and kernel.from_select_format
        assert kernel.pairs == pairs and kernel.precision_reduce is True
    assert table("ascend310").lookup("Conv2D").kernel.computes("float32") is False  # type: ignore[union-attr]


def test_a_dynamic_format_kernel_op_select_format_does_not_decide_stays_unknown() -> None:
    # BiasAdd asks api_check_support("tbe.dsl.vmuls", "float32"), which the snapshot cannot answer: unknown, not
    # "fp16 and fp32"; and the file says why.
    for family in FAMILIES:
        kernel = table(family).lookup("BiasAdd").kernel
        assert kernel is not None and kernel.input_dtypes is None and kernel.computes("float32") is None
    entry = json.loads((DATA / "ascend310.json").read_text())["aicore"]["BiasAdd"]
    assert entry["select_format"]["unknown"].startswith("what it offers depends on something asked of the chip")


def test_output_dtypes_are_paired_with_their_inputs() -> None:
    # ResizeBilinearV2D: fp16 or fp32 in, fp32 out, on each family whose table has it (not 910B and 310B, whose
    # TF resize reaches another kernel); ArgMaxD's output is an index (no float).
    for family in ("ascend310", "ascend310p", "ascend910"):
        resize = table(family).aicore_kernel("ResizeBilinearV2D")
        assert resize is not None and resize.outputs_for("float16") == {"float32"}
    arg_max = table("ascend310").aicore_kernel("ArgMaxD")
    assert arg_max is not None and arg_max.outputs_for("float16") == frozenset()


def black_list(family: str) -> set[str]:
    return {op for op, kernel in table(family).aicore_ops.items() if kernel.precision_reduce is False}


def test_ascend310s_black_list_is_reduce_mean_d_and_xlog1py() -> None:
    assert black_list("ascend310") == {"ReduceMeanD", "Xlog1py"}


def test_ascend310ps_black_list_differs_from_ascend310s() -> None:
    assert black_list("ascend310p") == {"SparseSegmentSumGrad", "Xlog1py"}


def test_ascend910_and_910b_black_lists_add_reductions_logs_and_pow() -> None:
    for family in ("ascend910", "ascend910b"):
        assert {"ReduceMeanD", "Xlog1py", "ReduceSum", "Log", "LogSoftmaxV2", "Pow"} <= black_list(family)


def test_reduce_sums_d_variant_is_gray_where_reduce_sum_is_black() -> None:
    # TF Sum with constant axes becomes ReduceSumD (reduce_sum_fusion_pass.cc), which carries no flag.
    support = table("ascend910").lookup("Sum")
    assert support.kernel is not None and support.kernel.op == "ReduceSumD"
    assert support.kernel.precision_reduce is None
    assert table("ascend910").aicore_kernel("ReduceSum").precision_reduce is False  # type: ignore[union-attr]


@pytest.mark.parametrize("tf_type", ["Softmax", "Exp", "FusedBatchNormV3"])
def test_gray_on_all_four(tf_type: str) -> None:
    for family in FOUR:
        kernel = table(family).lookup(tf_type).kernel
        assert kernel is not None and kernel.precision_reduce is None, family


def test_cube_and_white_list_flags_of_matmul() -> None:
    for family in FOUR:
        kernel = table(family).lookup("MatMul").kernel
        assert kernel is not None and kernel.op == "MatMulV2" and kernel.cube and kernel.precision_reduce is True


@pytest.mark.parametrize("tf_type", ["Lgamma", "LSTMBlockCell", "GRUBlockCell", "QuantizeV2"])
def test_unmapped_types(tf_type: str) -> None:
    support = table("ascend310").lookup(tf_type)
    assert not support.mapped and support.kernel is None and not support.has_aicpu
    assert tf_type not in table("ascend310")


def test_parser_builtins_are_marked() -> None:
    placeholder = table("ascend310").lookup("Placeholder")
    assert placeholder.parser_builtin and placeholder.parser_op == "Data" and not placeholder.ascend_ops
    for tf_type in ("Const", "Identity", "IdentityN", "Reshape", "Squeeze", "PlaceholderWithDefault", "Shape",
                    "StopGradient", "Snapshot", "Switch", "Merge", "Enter"):
        assert table("ascend910").lookup(tf_type).parser_builtin, tf_type
    assert not table("ascend910").lookup("Relu").parser_builtin


def test_ai_cpu_kernels_come_from_the_open_table() -> None:
    top_k = table("ascend310").lookup("TopKV2")
    assert dict(top_k.aicpu) == {"TopK": frozenset({"float16", "float32", "float64"})}
    assert not table("ascend310").lookup("Exp").has_aicpu  # not in the open aicpu_kernel.ini


def test_two_registrations_of_one_type_are_both_kept() -> None:
    assert dict(table("ascend310").lookup("FusedBatchNormV2").ascend_ops) == {
        "BatchNorm": "TVM", "FusedBatchNormV2": "AI_CPU"}


@pytest.mark.parametrize("family", FAMILIES)
def test_provenance_names_the_commits(family: str) -> None:
    loaded = table(family)
    assert loaded.source.commit == loaded.aicore_source.commit == OPS_COMMIT
    assert loaded.source.repository == "github.com/dengguojie/vue-element-admin"
    assert loaded.aicore_source.paths == (f"ops/built-in/tbe/op_info_cfg/ai_core/{family}/aic-{family}-ops-info.ini",
                                          "ops/built-in/tbe/impl/*.py (op_select_format)")
    assert loaded.parser_source.commit == PARSER_COMMIT
    assert loaded.parser_source.paths == ("parser/common/op_map.cc", "parser/common/parser_types.cc")
    assert loaded.date == "2022-06-29" and loaded.script == "scripts/build_op_tables.py"


@pytest.mark.parametrize("stem", [COMMON, *FAMILIES])
def test_committed_files_are_in_the_scripts_canonical_form(stem: str) -> None:
    # dump sorts every key and writes one table entry a line: a file it would write differently was edited by hand.
    text = (DATA / f"{stem}.json").read_text(encoding="utf-8")
    assert dump(json.loads(text)) == text


def test_the_tables_are_small() -> None:
    sizes = {path.name: path.stat().st_size for path in DATA.glob("*.json")}
    assert set(sizes) == {f"{stem}.json" for stem in (COMMON, *FAMILIES)}
    assert sum(sizes.values()) < 600_000


@pytest.mark.parametrize(("soc", "family"), [
    ("Ascend310", "ascend310"), ("Ascend310P1", "ascend310p"), ("Ascend310P3", "ascend310p"),
    ("Ascend310B1", "ascend310b"), ("Ascend310B4", "ascend310b"),
    ("Ascend910", "ascend910"), ("Ascend910A", "ascend910"), ("Ascend910ProA", "ascend910"),
    ("Ascend910ProB", "ascend910"), ("Ascend910PremiumA", "ascend910"),
    ("Ascend910B", "ascend910b"), ("Ascend910B2", "ascend910b"), ("Ascend910B2C", "ascend910b"),
    ("Ascend910B4-1", "ascend910b"), ("ascend910b3", "ascend910b"),
])
def test_family_of(soc: str, family: str) -> None:
    assert family_of(soc) == family


@pytest.mark.parametrize("soc", ["Ascend910_9391", "Ascend610", "Ascend310X", "", "Ascend9100"])
def test_family_of_refuses_chips_without_a_table(soc: str) -> None:
    with pytest.raises(OpTableError, match=rf"--soc-version {soc!r}: no operator table .*ascend310, ascend310b"):
        family_of(soc)


def test_the_refusal_is_a_convert_error_with_a_suggestion() -> None:
    with pytest.raises(ConvertError, match=r"did you mean Ascend910B2\?") as caught:
        family_of("Ascend910B9x")
    assert caught.value.hint is not None and "2022" in caught.value.hint


def test_op_table_for_a_chip() -> None:
    assert op_table_for("Ascend310P3").family == "ascend310p"


def test_an_unknown_family_is_refused() -> None:
    with pytest.raises(OpTableError, match=r"operator table 'ascend91': not a family .*did you mean ascend910\?"):
        load_op_table("ascend91")


def documents() -> tuple[dict[str, Any], dict[str, Any]]:
    return (json.loads((DATA / f"{COMMON}.json").read_text()), json.loads((DATA / "ascend310.json").read_text()))


def test_a_table_of_another_format_is_refused() -> None:
    common, family = documents()
    family["format"] = 1
    with pytest.raises(OpTableError, match=r"^f.json: expected an operator table of format 2, found 1$"):
        parse_op_table(common, family, "f.json", "c.json")
    with pytest.raises(OpTableError, match=r"^c.json: expected .* found 'list'$"):
        parse_op_table([], family, "f.json", "c.json")


def test_a_table_with_a_part_missing_is_refused() -> None:
    common, family = documents()
    del family["aicore"]
    with pytest.raises(OpTableError, match=r"^f.json with c.json: not a valid operator table \(KeyError: 'aicore'\)"):
        parse_op_table(common, family, "f.json", "c.json")


def test_a_missing_table_file_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(op_tables, "DATA_PACKAGE", "no_such_folder")
    with pytest.raises(OpTableError, match=r"^atc_wrap/precision/no_such_folder/ascend310.json: missing") as caught:
        op_tables._read("ascend310")
    assert caught.value.hint is not None and "build_op_tables.py" in caught.value.hint


def test_loading_reads_json_only_and_on_first_use() -> None:
    probe = ("import sys, atc_wrap.precision.op_tables as t\n"
             "assert t._load.cache_info().currsize == 0\n"
             "t.load_op_table('ascend310'); t.load_op_table('ascend310')\n"
             "heavy = sorted(m for m in ('numpy', 'tensorflow', 'onnx') if m in sys.modules)\n"
             "print(t._load.cache_info().misses, heavy)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, check=True)
    assert done.stdout.split() == ["1", "[]"]
