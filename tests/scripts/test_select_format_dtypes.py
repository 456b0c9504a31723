"""scripts/select_format_dtypes.py: the dtypes an op_select_format decides, read without running it, on sources
written here in the shapes the snapshot's take (a chip's SHORT_SOC_VERSION, a question the snapshot cannot answer,
a shape-dependent branch, helpers in other impl modules, loops). On the real snapshot the same reader gives the
committed tables (tests/scripts/test_build_op_tables.py, where INFER_CANN_OPS_GIT names it)."""

from __future__ import annotations

import pytest

from scripts.select_format_dtypes import select_pairs

HEAD = """
from impl.util import util_select_op_base
from impl.util.platform_adapter import tbe_platform
"""


def _select(family: str, body: str, **others: str):  # type: ignore[no-untyped-def]
    modules = {"impl.op": HEAD + body, **{f"impl.{name}": HEAD + text for name, text in others.items()}}
    return select_pairs(family, "impl.op", modules.get)


def _returning(input0: str, output0: str, indent: str = "    ") -> str:
    return (f'{indent}a = util_select_op_base.gen_param(classify="input0", name="x", datatype={input0}, format="ND")\n'
            f'{indent}b = util_select_op_base.gen_param(classify="output0", name="y", datatype={output0}, '
            'format="ND")\n'
            f'{indent}return util_select_op_base.get_dynamic_param_in_json([a, b])\n')


def test_the_columns_pair_input0_and_output0_and_only_floats_count() -> None:
    found = _select("ascend310", "def op_select_format(x, y):\n" + _returning('"float16,float,int8,float16"',
                                                                               '"float,float,int32,float16"'))
    assert found.pairs == (("float16", "float16"), ("float16", "float32"), ("float32", "float32"))


def test_the_chips_short_soc_version_picks_the_branch() -> None:
    body = ('def op_select_format(x, y):\n'
            '    if tbe_platform.get_soc_spec("SHORT_SOC_VERSION") in ("Ascend310", "SD3403"):\n'
            '        dtypes = "float16"\n'
            '    else:\n'
            '        dtypes = ",".join(["float16", "float"])\n' + _returning("dtypes", "dtypes"))
    assert _select("ascend310", body).pairs == (("float16", "float16"),)
    assert _select("ascend910", body).pairs == (("float16", "float16"), ("float32", "float32"))


def test_what_shapes_decide_is_united() -> None:
    body = ('def op_select_format(x, y):\n'
            '    if len(x.get("ori_shape")) == 4:\n' + _returning('"float16"', '"float16"', "        ")
            + _returning('"float"', '"float"'))
    assert _select("ascend310", body).pairs == (("float16", "float16"), ("float32", "float32"))


def test_a_question_the_snapshot_cannot_answer_leaves_the_op_unknown_where_the_answers_differ() -> None:
    differ = ('def op_select_format(x, y):\n'
              '    if tbe_platform.api_check_support("tbe.dsl.vmuls", "float32"):\n'
              '        dtypes = "float16,float"\n'
              '    else:\n'
              '        dtypes = "float16"\n' + _returning("dtypes", "dtypes"))
    found = _select("ascend310", differ)
    assert found.pairs is None and "asked of the chip" in found.why_unknown
    agree = differ.replace('dtypes = "float16,float"\n', 'dtypes = "float16"\n')
    assert _select("ascend310", agree).pairs == (("float16", "float16"),)


def test_the_fixpipe_unit_is_910bs_and_310bs() -> None:
    body = ('def op_select_format(x, y):\n'
            '    if tbe_platform.intrinsic_check_support("Intrinsic_fix_pipe_unit_list"):\n'
            + _returning('"float"', '"float"', "        ") + _returning('"float16"', '"float16"'))
    for family, dtype in (("ascend910b", "float32"), ("ascend310b", "float32"), ("ascend310", "float16"),
                          ("ascend310p", "float16"), ("ascend910", "float16")):
        assert _select(family, body).pairs == ((dtype, dtype),), family


def test_helpers_of_the_impl_modules_are_followed() -> None:
    body = ("from impl.util.util_helper import dtypes_for\n\n"
            "def op_select_format(x, y):\n" + _returning("dtypes_for(x)", "dtypes_for(x)"))
    helper = ("def dtypes_for(x):\n"
              "    found = []\n"
              "    for dtype in ('float16', 'float'):\n"
              "        found.append(dtype)\n"
              "    return ','.join(found)\n")
    assert _select("ascend310", body, **{"util.util_helper": helper}).pairs == (
        ("float16", "float16"), ("float32", "float32"))
    # a helper the snapshot does not hold: its result is unknown, and so is the op
    found = _select("ascend310", body)
    assert found.pairs is None and "not known" in found.why_unknown


def test_ways_that_fail_in_python_select_nothing() -> None:
    # `dtypes` is bound only for 4-D inputs: another rank raises UnboundLocalError, and an error raised on purpose
    # ends its way too; neither adds dtypes.
    body = ('def op_select_format(x, y):\n'
            '    if len(x.get("ori_shape")) == 4:\n'
            '        dtypes = "float16"\n'
            '    if x.get("format") == "NC1HWC0":\n'
            '        raise RuntimeError("not supported")\n' + _returning("dtypes", "dtypes"))
    assert _select("ascend310", body).pairs == (("float16", "float16"),)


@pytest.mark.parametrize(("case", "why"), [
    ('    dtypes = ""\n    for item in x.get("shape"):\n        dtypes += "float,"\n', "not known"),
    ("    dtypes = make(x)\n", "not known"),
])
def test_what_the_reading_cannot_follow_leaves_the_op_unknown(case: str, why: str) -> None:
    found = _select("ascend310", "def op_select_format(x, y):\n" + case + _returning("dtypes", "dtypes"))
    assert found.pairs is None and why in found.why_unknown


def test_a_module_without_op_select_format_is_unknown() -> None:
    found = _select("ascend310", "def other(x):\n    return x\n")
    assert found.pairs is None and "no op_select_format" in found.why_unknown
