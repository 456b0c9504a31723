"""What a failed compare says to do next, per target: --layerwise for the stand-in, an NPU dump for an om (on the
host it was converted on, where it was), tune-precision where fp16 trouble is the cause; nothing for a PASS."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from infer.cli.next_steps import next_steps


def _contract(target: str, settings: dict[str, Any] | None = None) -> Any:
    return SimpleNamespace(converted=SimpleNamespace(target=target, settings=settings or {}))


def _result(*, passed: bool = False, cause: str = "") -> Any:
    return SimpleNamespace(passed=passed, cause=cause, layerwise=None)


def _steps(result: Any, contract: Any) -> list[str]:
    return next_steps(result, contract, Path("m/model.json"), Path("bins"), Path("out"))


def test_the_stand_in_gets_layerwise_and_an_fp16_cause_gets_tune_precision() -> None:
    assert _steps(_result(passed=True), _contract("onnx")) == []
    assert _steps(_result(), _contract("onnx")) == [
        "next: infer compare m/model.json --input bins --actual out --layerwise   # where the converted model leaves "
        "TensorFlow"]
    steps = _steps(_result(cause="fp16 overflow (or underflow) inside the network"), _contract("onnx"))
    assert steps[0].endswith("--layerwise   # finds the op")
    assert steps[1] == ("      infer tune-precision m/model.json --input bins -o tuned   # the ops to keep in fp32 "
                        "(ATC's --keep_dtype): the fix")


def test_an_om_gets_an_npu_dump_on_the_host_it_was_converted_on() -> None:
    (here,) = _steps(_result(), _contract("om"))
    assert here.startswith("next: infer run m/model.json --input bins -o out --dump, then infer compare ")
    assert here.endswith("# on the Ascend server: where the converted model leaves TensorFlow")
    (there,) = _steps(_result(), _contract("om", {"remote": {"host": "ascend01", "workdir": "~/infer"}}))
    assert there.startswith("next: infer run m/model.json --input bins -o out --dump --host ascend01, then ")
    assert there.endswith("# on ascend01: where the converted model leaves TensorFlow")
