"""The stand-in for real: tf2onnx's model run by ONNX Runtime against TensorFlow, in fp32 and emulated fp16."""

from __future__ import annotations

import numpy as np
import pytest

from infer.contract import ModelContract, load_contract
from tests.atc_wrap.conftest import Convert
from tests.atc_wrap.outputs import cosine, onnx_outputs, tf_outputs


def images(seed: int = 1) -> dict[str, np.ndarray]:
    return {"images:0": np.random.default_rng(seed).normal(size=(2, 8, 8, 3)).astype(np.float32)}


@pytest.mark.slow
def test_onnx_small_cnn_matches_tensorflow_in_fp32(onnx_small_cnn: ModelContract) -> None:
    reloaded = load_contract(onnx_small_cnn.path)
    reloaded.check_converted_unchanged()
    assert reloaded.converted is not None
    assert reloaded.converted.target == "onnx"
    assert reloaded.converted.precision_mode == "must_keep_origin_dtype"
    assert reloaded.converted.settings["emulation"]["storage"] == "fp32"
    assert reloaded.converted.settings["tensor_names"] == {"images:0": "images:0", "probs:0": "probs:0"}
    assert [(s.name, s.dtype, s.shape) for s in reloaded.converted.inputs] == [("images:0", "float32", (2, 8, 8, 3))]
    assert [(s.name, s.dtype, s.shape) for s in reloaded.converted.outputs] == [("probs:0", "float32", (2, 5))]
    np.testing.assert_allclose(onnx_outputs(reloaded, images())[0], tf_outputs(reloaded, images())[0],
                               rtol=0, atol=1e-5)


def test_onnx_model_passes_the_checker_at_the_default_opset(onnx_small_cnn: ModelContract) -> None:
    import onnx

    from atc_wrap.standin.opset import default_opset

    assert onnx_small_cnn.converted_path is not None
    model = onnx.load(str(onnx_small_cnn.converted_path))
    onnx.checker.check_model(model, full_check=True)
    opset = {o.domain: o.version for o in model.opset_import}[""]
    assert onnx_small_cnn.converted is not None
    assert opset == default_opset() == onnx_small_cnn.converted.settings["opset"]
    assert opset >= 15


def test_force_fp16_stays_close_to_tensorflow_but_is_not_fp32(
    onnx_small_cnn: ModelContract, onnx_small_cnn_fp16: ModelContract
) -> None:
    expected = tf_outputs(onnx_small_cnn, images())[0]
    fp32 = onnx_outputs(onnx_small_cnn, images())[0]
    fp16 = onnx_outputs(onnx_small_cnn_fp16, images())[0]
    assert cosine(fp16, expected) >= 0.999
    assert np.abs(fp16 - expected).max() < 1e-2
    assert np.abs(fp16 - fp32).max() > 1e-5  # the emulation is real: fp16 rounding shows
    assert onnx_small_cnn_fp16.converted is not None
    emulation = onnx_small_cnn_fp16.converted.settings["emulation"]
    assert emulation["storage"] == "fp16"
    assert emulation["rounded_tensors"] > 0 and emulation["rounded_weights"] > 0
    assert any("fusion" in line for line in emulation["not_emulated"])
    assert any("accumulation order" in line for line in emulation["not_emulated"])


@pytest.mark.slow
@pytest.mark.parametrize("optimize", [True, False], ids=["ort-optimized", "ort-unoptimized"])
def test_fp16_emulation_overflows_where_fp32_does_not(
    energy_model: ModelContract, converted: Convert, optimize: bool
) -> None:
    x = {"x:0": np.random.default_rng(2).uniform(250, 350, size=(2, 64)).astype(np.float32)}
    expected = tf_outputs(energy_model, x)[0]
    assert np.isfinite(expected).all() and expected.min() > 250 / 16  # so fp32 must stay finite below
    fp32 = onnx_outputs(converted(energy_model, precision_mode="force_fp32"), x, optimize=optimize)[0]
    np.testing.assert_allclose(fp32, expected, rtol=1e-5, atol=1e-5)  # no matrix op: every op fp32
    fp16 = onnx_outputs(converted(energy_model, precision_mode="force_fp16"), x, optimize=optimize)[0]
    assert not np.isfinite(fp16).any(), f"force_fp16: square(x) > 65504 must overflow, got {fp16}"


def test_force_fp16_overflows_a_vector_reduction_allow_fp32_to_fp16_keeps_in_fp32(
    matmul_sum_model: ModelContract, converted: Convert
) -> None:
    """allow_fp32_to_fp16 lowers the matrix op (MatMul) and keeps the vector ops (the Sum, the division) in fp32
    where the chip has fp32 kernels: a sum past 65504 of values fp16 holds overflows only under force_fp16."""
    x = {"x:0": np.random.default_rng(3).uniform(1900, 2100, size=(2, 64)).astype(np.float32)}
    expected = tf_outputs(matmul_sum_model, x)[0]
    forced = onnx_outputs(converted(matmul_sum_model, precision_mode="force_fp16"), x)[0]
    lowered_contract = converted(matmul_sum_model, precision_mode="allow_fp32_to_fp16")
    lowered = onnx_outputs(lowered_contract, x)[0]
    assert not np.isfinite(forced).any()  # the sum, 128000, is past fp16's 65504
    assert np.isfinite(lowered).all()
    # The product of fp16 inputs is stored in fp16 (x rounded, the identity exact), the sum and division in fp32.
    projected = x["x:0"].astype(np.float16).astype(np.float32)
    np.testing.assert_allclose(lowered, projected.sum(axis=1) / 1024, rtol=1e-6)
    np.testing.assert_allclose(lowered, expected, rtol=1e-3)
    assert lowered_contract.converted is not None
    plan = lowered_contract.converted.plan()
    assert plan is not None
    assert [(e.node, e.ascend_op, e.dtype, e.decided_by) for e in plan.ops] == [
        ("projected", "MatMulV2", "float16", "mode"), ("total", "ReduceSumD", "float32", "mode"),
        ("truediv", "RealDiv", "float32", "mode")]


def test_must_keep_origin_dtype_keeps_fp32(energy_model: ModelContract, converted: Convert) -> None:
    x = {"x:0": np.random.default_rng(2).uniform(250, 350, size=(2, 64)).astype(np.float32)}
    kept = converted(energy_model, precision_mode="must_keep_origin_dtype")
    np.testing.assert_allclose(onnx_outputs(kept, x)[0], tf_outputs(energy_model, x)[0], rtol=1e-5, atol=1e-5)
    assert kept.converted is not None and kept.converted.settings["emulation"]["rounded_tensors"] == 0


def test_mix_precision_follows_the_chips_lists(matmul_sum_model: ModelContract, converted: Convert) -> None:
    """allow_mix_precision by the table: MatMulV2 is white, and TF Sum becomes ReduceSumD, gray on every chip (the
    hand-picked list kept every reduction in fp32): it follows the fp16 MatMul, and the sum overflows."""
    x = {"x:0": np.random.default_rng(3).uniform(1900, 2100, size=(2, 64)).astype(np.float32)}
    mixed_contract = converted(matmul_sum_model, precision_mode="allow_mix_precision")
    mixed = onnx_outputs(mixed_contract, x)[0]
    assert not np.isfinite(mixed).any()
    assert mixed_contract.converted is not None
    plan = mixed_contract.converted.plan()
    assert plan is not None
    assert [(e.node, e.mix_list, e.dtype) for e in plan.ops] == [
        ("projected", "white", "float16"), ("total", "gray", "float16"), ("truediv", "gray", "float16")]
    emulation = mixed_contract.converted.settings["emulation"]
    assert emulation["storage"] == "fp16" and emulation["planned"] and emulation["fp32_op_types"] == []


def test_fp16_input_and_output_nodes_change_the_model_and_contract(
    frozen_small_cnn: ModelContract, converted: Convert
) -> None:
    import onnxruntime

    contract = converted(frozen_small_cnn, precision_mode="force_fp16", input_fp16_nodes="images",
                         output_type="probs:0:FP16")
    assert contract.converted is not None
    assert [s.dtype for s in contract.converted.inputs] == ["float16"]
    assert [s.dtype for s in contract.converted.outputs] == ["float16"]
    assert [s.dtype for s in load_contract(contract.path).model_inputs] == ["float16"]
    session = onnxruntime.InferenceSession(str(contract.converted_path), providers=["CPUExecutionProvider"])
    assert [i.type for i in session.get_inputs()] == ["tensor(float16)"]
    assert [o.type for o in session.get_outputs()] == ["tensor(float16)"]
    got = onnx_outputs(contract, images())[0]
    assert got.dtype == np.float16
    assert cosine(got, tf_outputs(frozen_small_cnn, images())[0]) >= 0.999


def test_fp16_output_under_force_fp32_rounds_only_the_output(
    frozen_small_cnn: ModelContract, converted: Convert
) -> None:
    contract = converted(frozen_small_cnn, precision_mode="force_fp32", output_type="FP16")
    got = onnx_outputs(contract, images())[0]
    assert got.dtype == np.float16
    fp32_out = converted(frozen_small_cnn, precision_mode="force_fp32")
    np.testing.assert_array_equal(got, onnx_outputs(fp32_out, images())[0].astype(np.float16))


@pytest.mark.slow
def test_bert_like_model_in_fp32_and_emulated_fp16(
    bert_like: tuple[ModelContract, dict[str, np.ndarray]], converted: Convert
) -> None:
    contract, feeds = bert_like
    expected = tf_outputs(contract, feeds)
    fp32 = onnx_outputs(converted(contract, precision_mode="must_keep_origin_dtype"), feeds)
    fp16_contract = converted(contract, precision_mode="force_fp16")
    fp16 = onnx_outputs(fp16_contract, feeds)
    assert fp16_contract.converted is not None
    assert [s.dtype for s in fp16_contract.converted.inputs] == ["int32", "int32", "int32"]  # ints untouched
    assert fp16_contract.converted.settings["emulation"]["untyped_tensors"] == 0
    for name, want, got32, got16 in zip([s.name for s in contract.outputs], expected, fp32, fp16, strict=True):
        np.testing.assert_allclose(got32, want, rtol=0, atol=1e-5, err_msg=name)
        assert cosine(got16, want) >= 0.999, name
        assert np.abs(got16 - got32).max() > 1e-5, name
