"""The shared stand-in fixture other stages run against: a real, checked ONNX model matching TensorFlow."""

from __future__ import annotations

import numpy as np

from infer.contract import ModelContract, load_contract


def tf_outputs(contract: ModelContract, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    import tensorflow as tf

    from atc_wrap.graph import read_graph_def

    tf1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        tf1.import_graph_def(read_graph_def(contract.pb_path), name="")
    with tf1.Session(graph=graph) as session:
        return list(session.run([s.name for s in contract.outputs], feed_dict=feeds))


def onnx_outputs(contract: ModelContract, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    import onnxruntime

    assert contract.converted_path is not None
    session = onnxruntime.InferenceSession(str(contract.converted_path), providers=["CPUExecutionProvider"])
    return list(session.run([s.name for s in contract.model_outputs], feeds))


def test_onnx_small_cnn_matches_tensorflow_in_fp32(onnx_small_cnn: ModelContract) -> None:
    reloaded = load_contract(onnx_small_cnn.path)
    reloaded.check_converted_unchanged()
    assert reloaded.converted is not None
    assert reloaded.converted.target == "onnx"
    assert reloaded.converted.precision_mode == "force_fp32"
    assert [s.name for s in reloaded.converted.inputs] == ["images:0"]
    assert [(s.name, s.dtype, s.shape) for s in reloaded.converted.outputs] == [("probs:0", "float32", (2, 5))]
    images = np.random.default_rng(1).normal(size=(2, 8, 8, 3)).astype(np.float32)
    expected = tf_outputs(reloaded, {"images:0": images})
    got = onnx_outputs(reloaded, {"images:0": images})
    np.testing.assert_allclose(got[0], expected[0], rtol=0, atol=1e-5)
