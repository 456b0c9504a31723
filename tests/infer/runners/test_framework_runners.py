"""TensorFlow and ONNX Runtime runners on the small CNN: real sessions, outputs that agree, and a reference."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from infer.contract import ModelContract
from infer.run._runners.base import RunnerError
from infer.run._runners.onnxrt import OnnxRuntimeRunner
from infer.run._runners.tensorflow import TensorFlowRunner
from tests.conftest import Copy
from tests.infer.run_data import cnn_batches, two_input_model


def _numpy_reference(contract: ModelContract, images: np.ndarray) -> np.ndarray:
    """The small CNN recomputed from its checkpoint's weights with numpy: TF is checked, not trusted."""
    import tensorflow as tf

    reader = tf.train.load_checkpoint(contract.source.path)
    kernel, bias, weights = (reader.get_tensor(n) for n in ("conv/kernel", "conv/bias", "head/weights"))
    padded = np.pad(images.astype(np.float64), ((0, 0), (1, 1), (1, 1), (0, 0)))
    conv = np.zeros((*images.shape[:3], kernel.shape[3]))
    for dy in range(3):
        for dx in range(3):
            conv += np.einsum("bhwc,co->bhwo", padded[:, dy:dy + 8, dx:dx + 8, :], kernel[dy, dx])
    pooled = np.maximum(conv + bias, 0).mean(axis=(1, 2))
    logits = pooled @ weights
    exp = np.exp(logits - logits.max(axis=1, keepdims=True))
    return exp / exp.sum(axis=1, keepdims=True)


def test_tensorflow_runner_on_its_own_matches_numpy(frozen_small_cnn: ModelContract) -> None:
    images = cnn_batches(1)[0]
    with TensorFlowRunner(frozen_small_cnn) as runner:
        assert [s.name for s in runner.inputs] == ["images:0"] and [s.name for s in runner.outputs] == ["probs:0"]
        (probs,) = runner.infer({"images:0": images})
    assert probs.dtype == np.float32 and probs.shape == (2, 5)
    np.testing.assert_allclose(probs, _numpy_reference(frozen_small_cnn, images), rtol=1e-5, atol=1e-6)


def test_onnxrt_runner_agrees_with_tensorflow(frozen_small_cnn: ModelContract, onnx_small_cnn: ModelContract) -> None:
    batches = cnn_batches(3, seed=5)
    with TensorFlowRunner(frozen_small_cnn, threads=1) as tf_runner, \
            OnnxRuntimeRunner.from_contract(onnx_small_cnn, threads=1) as ort_runner:
        assert ort_runner.device == "CPUExecutionProvider"
        for images in batches:
            (golden,) = tf_runner.infer({"images:0": images})
            (converted,) = ort_runner.infer({"images:0": images})
            np.testing.assert_allclose(converted, golden, rtol=1e-5, atol=1e-6)


def test_onnxrt_runner_feeds_inputs_by_name_and_keeps_output_order(tmp_path: Path) -> None:
    contract = two_input_model(tmp_path / "model", "onnx")
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.full((2, 3), 0.5, np.float16)
    with OnnxRuntimeRunner.from_contract(contract) as runner:
        total, half = runner.infer({"b:0": b, "a:0": a})
    np.testing.assert_array_equal(total, a + 0.5)
    assert half.dtype == np.float16
    np.testing.assert_array_equal(half, (a + 0.5).astype(np.float16))


def test_onnxrt_runner_refuses_a_device_without_cuda(tmp_path: Path) -> None:
    import onnxruntime

    if "CUDAExecutionProvider" in onnxruntime.get_available_providers():
        pytest.skip("this onnxruntime has CUDA")
    runner = OnnxRuntimeRunner.from_contract(two_input_model(tmp_path / "model", "onnx"), device=1)
    with pytest.raises(RunnerError, match=r"^--device 1: this onnxruntime has no CUDA provider"):
        runner.activate()


def test_onnxrt_runner_refuses_a_contract_without_onnx(frozen_small_cnn: ModelContract) -> None:
    with pytest.raises(RunnerError) as caught:
        OnnxRuntimeRunner.from_contract(frozen_small_cnn)
    assert str(caught.value) == (f"{frozen_small_cnn.path}: the onnxrt backend needs an ONNX model, "
                                 "convert produced nothing")


def test_a_model_file_that_is_not_the_contracts_is_refused_as_the_runner_starts(
        copy_model: Copy, frozen_small_cnn: ModelContract, onnx_small_cnn: ModelContract) -> None:
    """Its sha256 is checked beside the framework's import and the model's load; where the load fails too (a file
    that is no model at all), the stale file is what the error names."""
    from infer.contract import ContractError

    onnx_model = copy_model(onnx_small_cnn)
    assert onnx_model.converted_path is not None
    import onnx

    edited = onnx.load(str(onnx_model.converted_path))
    edited.doc_string = "edited after convert"  # loads as before, but is not the file convert recorded
    onnx.save(edited, str(onnx_model.converted_path))
    with pytest.raises(ContractError, match=r"model\.onnx changed since convert"):
        OnnxRuntimeRunner.from_contract(onnx_model).activate()
    onnx_model.converted_path.write_bytes(b"not a model")
    runner = OnnxRuntimeRunner.from_contract(onnx_model)
    with pytest.raises(ContractError, match=r"model\.onnx changed since convert"):
        runner.activate()
    assert not runner.is_active
    tf_model = copy_model(frozen_small_cnn)
    tf_model.pb_path.write_bytes(tf_model.pb_path.read_bytes() + b"\n")
    with pytest.raises(ContractError, match=r"model\.pb changed since freeze"):
        TensorFlowRunner(tf_model).activate()
    from infer.run._runners.declared import DeclaredPreprocessingRunner

    wrapped = DeclaredPreprocessingRunner(TensorFlowRunner(tf_model), {}, {})  # an AIPP dataset's golden run
    with pytest.raises(ContractError, match=r"model\.pb changed since freeze"):
        wrapped.check_available()  # what a sharded run asks before its workers start
