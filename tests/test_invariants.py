"""The invariants of DEVELOPERS.md held on every model the suite builds (tests/model_registry.py), not on one example:

- with every op planned fp32, the stand-in is TensorFlow's fp32: no weight or tensor rounded to fp16, every output
  within float32 rounding of TensorFlow's;
- whatever tf2onnx converts, the stand-in converts, in every precision mode (control flow included), and runs;
- the same pb and options give the same ONNX bytes.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from atc_wrap.precision.modes import PRECISION_MODES, PrecisionMode
from infer.contract import ModelContract, load_contract
from tests.atc_wrap.outputs import onnx_outputs, tf_outputs
from tests.model_registry import MODEL_NAMES, registered

pytestmark = pytest.mark.slow

Built = Callable[[str], ModelContract]
Converted = Callable[[str, PrecisionMode], ModelContract]
# Float32 rounding, as two implementations of the same fp32 graph differ (summation order inside an op): relative to
# the output's own scale. An fp16 rounding anywhere shows at 1e-4 to 1e-3 of it.
_FP32_RTOL = 2e-6


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    cache: dict[str, ModelContract] = {}

    def build(name: str) -> ModelContract:
        if name not in cache:
            cache[name] = registered(name).build(tmp_path_factory.mktemp(f"registry_{name}"))
        return cache[name]

    return build


def _convert(contract: ModelContract, folder: Path, mode: PrecisionMode) -> ModelContract:
    from infer.convert._convert import ConvertOptions, convert_model

    shutil.copytree(contract.folder, folder)
    copy = load_contract(folder / contract.path.name)
    # --allow-unsupported: must_keep_origin_dtype on an op whose only kernel is fp16 (ATC would refuse; the
    # stand-in computes it in fp32, which is what this mode asks).
    return convert_model(copy, ConvertOptions(target="onnx", precision_mode=mode, allow_unsupported=True)).contract


@pytest.fixture(scope="session")
def converted(built: Built, tmp_path_factory: pytest.TempPathFactory) -> Converted:
    cache: dict[tuple[str, str], ModelContract] = {}

    def convert(name: str, mode: PrecisionMode) -> ModelContract:
        if (name, mode) not in cache:
            cache[(name, mode)] = _convert(built(name), tmp_path_factory.mktemp(f"{name}_{mode}") / "model", mode)
        return cache[(name, mode)]

    return convert


@pytest.mark.parametrize("mode", PRECISION_MODES)
@pytest.mark.parametrize("name", MODEL_NAMES)
def test_the_stand_in_converts_and_runs_in_every_precision_mode(converted: Converted, name: str,
                                                                mode: PrecisionMode) -> None:
    contract = converted(name, mode)
    feeds = registered(name).feeds(contract)
    got, expected = onnx_outputs(contract, feeds), tf_outputs(contract, feeds)
    assert [g.shape for g in got] == [np.shape(e) for e in expected]


@pytest.mark.parametrize("mode", ["must_keep_origin_dtype", "force_fp32"])
@pytest.mark.parametrize("name", MODEL_NAMES)
def test_with_every_op_planned_fp32_the_stand_in_is_tensorflows_fp32(converted: Converted, name: str,
                                                                      mode: PrecisionMode) -> None:
    contract = converted(name, mode)
    assert contract.converted is not None
    plan = contract.converted.plan()
    assert plan is not None
    fp16 = [op.node for op in plan.ops if "float16" in (op.input_dtype, op.output_dtype)]
    if mode == "force_fp32" and fp16:
        pytest.skip(f"force_fp32 plans {len(fp16)} ops with fp16 inputs here (a matrix op, or no fp32 kernel)")
    assert not fp16
    emulation = contract.converted.settings["emulation"]
    rounded = {key: emulation[key] for key in ("rounded_weights", "rounded_tensors", "rounded_later")}
    assert rounded == {"rounded_weights": 0, "rounded_tensors": 0, "rounded_later": 0}
    feeds = registered(name).feeds(contract)
    for spec, got, expected in zip(contract.outputs, onnx_outputs(contract, feeds), tf_outputs(contract, feeds),
                                   strict=True):
        if not np.issubdtype(np.asarray(expected).dtype, np.floating):
            np.testing.assert_array_equal(got, expected, err_msg=spec.name)
            continue
        scale = max(float(np.abs(expected).max()), 1e-3)
        worst = float(np.abs(got.astype(np.float64) - expected).max())
        assert worst <= _FP32_RTOL * scale, f"{spec.name}: max |diff| {worst:.3g} at scale {scale:.3g}"


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_the_same_pb_and_options_give_the_same_bytes(converted: Converted, built: Built, name: str,
                                                     tmp_path: Path) -> None:
    first = converted(name, "force_fp16")
    again = _convert(built(name), tmp_path / "model", "force_fp16")
    assert first.converted_path is not None and again.converted_path is not None
    assert again.converted_path.read_bytes() == first.converted_path.read_bytes()
