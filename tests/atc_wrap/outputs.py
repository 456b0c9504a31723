"""Running a contract's frozen pb in TensorFlow and its stand-in in ONNX Runtime, for comparing the two."""

from __future__ import annotations

from typing import Any

import numpy as np

from infer.contract import ModelContract


def tf_outputs(contract: ModelContract, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    import tensorflow as tf

    from ckpt2pb.protobuf import read_graph_def

    tf1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        tf1.import_graph_def(read_graph_def(contract.pb_path), name="")
    with tf1.Session(graph=graph) as session:
        return list(session.run([s.name for s in contract.outputs], feed_dict=feeds))


def onnx_outputs(contract: ModelContract, feeds: dict[str, np.ndarray], *, optimize: bool = True) -> list[np.ndarray]:
    """ONNX Runtime's outputs, each input cast to the converted model's dtype; with or without graph optimisations."""
    import onnxruntime

    assert contract.converted_path is not None
    options = onnxruntime.SessionOptions()
    if not optimize:
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = onnxruntime.InferenceSession(str(contract.converted_path), options,
                                           providers=["CPUExecutionProvider"])
    typed = {s.name: feeds[s.name].astype(s.dt.np_dtype) for s in contract.model_inputs}
    return list(session.run([s.name for s in contract.model_outputs], typed))



def onnx_tensors(model: Any, feeds: dict[str, np.ndarray], names: list[str]) -> list[np.ndarray]:
    """ONNX Runtime's values of any float tensors of `model` (an onnx ModelProto, left as it is), made outputs of a
    copy of it."""
    import onnx
    import onnxruntime

    exposed = onnx.ModelProto.FromString(model.SerializeToString())
    outputs = {o.name for o in exposed.graph.output}
    exposed.graph.output.extend(onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None)
                                for name in names if name not in outputs)
    session = onnxruntime.InferenceSession(exposed.SerializeToString(), providers=["CPUExecutionProvider"])
    return [np.asarray(value) for value in session.run(names, feeds)]

def cosine(x: np.ndarray, y: np.ndarray) -> float:
    a, b = x.astype(np.float64).ravel(), y.astype(np.float64).ravel()
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))
