"""The pipeline's verdict as `infer compare` prints it: a failed one in one short line with what it rests on below
(the reasons once), with gears the one across them naming the failing gears; a record written before compare kept
its short line still prints its whole verdict line."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from infer.pipeline._gears import PipelineGear
from infer.pipeline._runner import PipelineResult, _verdict, report_tail

FAILED: dict[str, Any] = {"passed": False, "report_html": "r.html",
          "verdict": "FAILED: probs:0 CosineSimilarity 0.5 < 0.99; probs:0 KullbackLeiblerDivergence 1.2 > 0.005 | "
                     "golden: tensorflow model.pb (1a2b3c4d) | actual: onnxrt model.onnx force_fp16 (5e6f7a8b)",
          "headline": "FAILED: probs:0 CosineSimilarity 0.5 < 0.99 (and 1 more)",
          "details": ["limits broken: probs:0 CosineSimilarity 0.5 < 0.99; probs:0 KullbackLeiblerDivergence 1.2 > "
                      "0.005", "golden: tensorflow model.pb (1a2b3c4d) | actual: onnxrt model.onnx force_fp16 "
                      "(5e6f7a8b)"]}
PASSED: dict[str, Any] = {"passed": True, "report_html": "p.html", "verdict": "PASSED | golden: ...",
                          "headline": "PASSED", "details": ["golden: ..."]}


def _result(facts: dict[str, dict[str, Any]], gears: tuple[PipelineGear, ...] = ()) -> PipelineResult:
    verdict = _verdict(facts, gears)
    return PipelineResult(work_dir=Path("work"), stages=(), passed=verdict.passed, verdict=verdict.line,
                          report_html=None, report_path=Path("work/pipeline-report.txt"), atc_command=(),
                          atc_note="no ATC", msame_command=("msame",), headline=verdict.headline,
                          verdict_details=verdict.details)


def test_a_failed_verdict_is_one_short_line_and_its_details() -> None:
    tail = report_tail(_result({"compare": FAILED}))
    assert tail[:3] == [FAILED["headline"], f"  {FAILED['details'][0]}", f"  {FAILED['details'][1]}"]
    assert sum(line.count("KullbackLeiblerDivergence") for line in tail) == 1  # the reasons once


def test_a_passed_verdict_and_an_older_record_print_the_verdict_line() -> None:
    assert report_tail(_result({"compare": PASSED}))[0] == "PASSED | golden: ..."
    older = {key: value for key, value in FAILED.items() if key not in ("headline", "details")}
    assert report_tail(_result({"compare": older}))[0] == FAILED["verdict"]


def test_failing_gears_are_named_in_the_short_line_each_with_its_own_below() -> None:
    gears = tuple(PipelineGear(tag, label, cast(Any, None)) for tag, label in (("b4", "batch 4"), ("b8", "batch 8")))
    tail = report_tail(_result({"compare@b4": PASSED, "compare@b8": FAILED}, gears))
    assert tail[:4] == ["FAILED: 1 of 2 gears: batch 8", f"  batch 8: {FAILED['headline']}",
                        f"    {FAILED['details'][0]}", f"    {FAILED['details'][1]}"]
    assert report_tail(_result({"compare@b4": PASSED, "compare@b8": PASSED}, gears))[0] == \
        "PASSED: 2 gears (batch 4, batch 8)"
