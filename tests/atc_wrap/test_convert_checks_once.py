"""`infer convert` reads and checks each option once per conversion, on both targets: the contract and the options
become one plan (`infer.convert._plan`), and ATC's argv and the stand-in take it without checking again. Each check
is counted wherever a module bound it, through the library's own entry (`convert_model`), options built included."""

from __future__ import annotations

import functools
import json
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from atc_wrap.target import Target
from infer.contract import ModelContract
from infer.convert import ConvertOptions, convert_model
from tests.atc_wrap.conftest import FakeAtc

# Where each check is defined; counted under its name wherever it was imported.
CHECKS: dict[str, tuple[str, ...]] = {
    "atc_wrap.precision.modes": ("check_precision_mode", "check_implmode", "parse_input_fp16_nodes",
                                 "parse_output_type", "output_type_arg"),
    "atc_wrap.target": ("check_target",),
    "atc_wrap.atc.soc": ("check_soc_version",),
    "atc_wrap.atc.dynamic_shapes": ("check_dynamic",),
    "atc_wrap.nodes": ("check_nodes_exist",),
    "atc_wrap.precision.op_controls": ("check_mixlist_mode", "read_op_controls", "check_op_controls",
                                       "ignored_controls"),
    "atc_wrap.precision.plan": ("plan_precision", "refuse_planned"),
    "atc_wrap.precision.precheck": ("precheck",),
    "atc_wrap.standin.convert": ("check_output_types",),
    "atc_wrap.standin.opset": ("check_opset",),
    "infer.convert._plan": ("plan_conversion",),
    "ckpt2pb.protobuf": ("read_graph_def",),
}
# --soc-version is checked on both targets: the stand-in refuses a chip ATC would refuse (a typo caught here).
ONLY_OM = {"check_implmode"}
ONLY_ONNX = {"check_output_types", "check_opset"}


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """Every check wrapped to count its calls, in its own module and in every module that imported it."""
    import importlib

    calls: Counter[str] = Counter()

    def counting(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(original)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            calls[name] += 1
            return original(*args, **kwargs)
        return wrapper

    for module_name, names in CHECKS.items():
        module = importlib.import_module(module_name)
        for name in names:
            original = getattr(module, name)
            wrapped = counting(name, original)
            for holder in list(sys.modules.values()):
                if getattr(holder, "__name__", "").partition(".")[0] in ("atc_wrap", "infer", "ckpt2pb") and \
                        getattr(holder, name, None) is original:
                    monkeypatch.setattr(holder, name, wrapped)
    yield calls


def _controls(folder: Path) -> tuple[Path, Path]:
    """A keep_dtype file and a modify_mixlist one, both naming the model's one op."""
    keep = folder / "keep.cfg"
    keep.write_text("mul\n", encoding="utf-8")
    mixlist = folder / "mixlist.json"
    mixlist.write_text(json.dumps({"black-list": {"to-add": ["Mul"]}}), encoding="utf-8")
    return keep, mixlist


@pytest.mark.parametrize("target", ["om", "onnx"])
def test_each_option_is_checked_once_per_conversion(
    target: str, counted: Counter[str], fake_atc: FakeAtc, unknown_batch: ModelContract,
    copy_model: Callable[[ModelContract], ModelContract], tmp_path: Path,
) -> None:
    contract = copy_model(unknown_batch)
    keep, mixlist = _controls(tmp_path)
    options = ConvertOptions(target=cast(Target, target), soc_version="Ascend310", precision_mode="allow_mix_precision",
                             input_fp16_nodes="x", output_type="FP16", dynamic_batch=(1, 2), keep_dtype=keep,
                             modify_mixlist=mixlist, op_select_implmode="high_precision" if target == "om" else None)
    result = convert_model(contract, options)
    assert result.target == target and result.plan is not None
    assert result.contract.converted is not None and result.contract.converted.gears is not None
    if target == "om":
        assert "--dynamic_batch_size=1,2" in fake_atc.argv()
    expected = {name for names in CHECKS.values() for name in names} - (ONLY_ONNX if target == "om" else ONLY_OM)
    assert {name: calls for name, calls in counted.items() if calls != 1} == {}
    assert set(counted) == expected
