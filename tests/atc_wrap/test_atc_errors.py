"""Reading ATC's output: the error codes it prints and the plain hint each common one gets."""

from __future__ import annotations

from pathlib import Path

import pytest

from atc_wrap.atc.run import HINTS, error_codes, judge_output
from atc_wrap.errors import ConvertError
from binio.process import ToolResult

FAILED = "ATC run failed, Please check the detail log, Try 'atc --help' for more information"


def result(*lines: str, code: int = 255) -> ToolResult:
    return ToolResult(argv=("atc",), returncode=code, output="\n".join(lines) + "\n", seconds=1.0)


@pytest.mark.parametrize(("line", "code", "hint_start"), [
    ("E10002: Value [images:2,8,8] for parameter [--input_shape] is invalid. Reason: the shape has 3 dims.",
     "E10002", "ATC rejected --input_shape"),
    ("E10011: For the input parameter --input_shape, the op name [image] of the input node is not found.",
     "E10011", "ATC rejected --input_shape"),
    ("E10031: Input parameter[--dynamic_batch_size] can only be used with a -1 dim in [--input_shape].",
     "E10031", "--dynamic_batch_size needs an input whose batch dim is -1"),
    ("E10001: Value [Ascend999] for parameter [--soc_version] is invalid. Reason: not supported.",
     "E10001", "ATC rejected an option value"),
    ("EZ3003: No supported Ops kernel and engine are found for [Igamma], optype [Igamma].",
     "EZ3003", "an op has no kernel for this chip"),
    ("E19010: No parser is registered for Op [Zeta], optype [Zeta].", "E19010", "ATC has no TensorFlow parser"),
])
def test_common_codes_get_a_plain_hint(line: str, code: str, hint_start: str) -> None:
    with pytest.raises(ConvertError) as caught:
        judge_output(result("ATC start working now, please wait for a moment.", FAILED, line, "        TraceBack ..."),
               Path("/nonexistent/model.om"))
    assert caught.value.message == f"atc failed (exit 255): {line}"
    assert caught.value.hint is not None and caught.value.hint.startswith(f"{code}: {hint_start}")
    assert HINTS[code].startswith(hint_start)


def test_codes_are_read_in_order_once_each() -> None:
    output = "E10016: a\nW11001: warn\nEZ3003: b\nE10016: again\nTraceBack E19999 ErrorCode\n"
    assert error_codes(output) == ("E10016", "EZ3003", "E19999")


def test_an_unknown_code_falls_back_to_the_last_lines() -> None:
    with pytest.raises(ConvertError) as caught:
        judge_output(result(FAILED, "E29999: something new", "TraceBack line"), Path("/nonexistent/model.om"))
    assert caught.value.message == "atc failed (exit 255): E29999: something new"
    assert caught.value.hint == f"its last lines: {FAILED} | E29999: something new | TraceBack line"


def test_a_failure_without_codes_says_so() -> None:
    with pytest.raises(ConvertError) as caught:
        judge_output(result("Segmentation fault", code=139), Path("/nonexistent/model.om"))
    assert caught.value.message == "atc failed (exit 139) without an error code"


def test_success_line_without_the_om_is_a_failure(tmp_path: Path) -> None:
    with pytest.raises(ConvertError) as caught:
        judge_output(result("ATC run success, welcome to the next use.", code=0), tmp_path / "model.om")
    assert caught.value.message == f"atc printed 'ATC run success' but wrote no {tmp_path / 'model.om'}"
