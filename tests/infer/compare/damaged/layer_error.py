"""The damage's size at its own layer, measured without the diagnosis under test: TensorFlow's value of the layer's
output against the value the damaged ONNX node computes, on the dataset's first batch (the batch `--layerwise`
compares when every batch passes). A case is below msit's per-tensor limits when cosine >= 0.99 and RED <= 0.05.

The ONNX node is the one the damage edited (`damages.onnx_node`), made a graph output; a 4-D tensor there is NCHW
(tf2onnx computes every Conv, and what lies between its transposes, in NCHW), so it is transposed to TF's NHWC."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from tests.infer.compare.damaged.damages import onnx_node


def tf_value(pb: Path, tensor: str, feed: dict[str, np.ndarray]) -> np.ndarray:
    import tensorflow as tf

    graph_def = tf.compat.v1.GraphDef.FromString(pb.read_bytes())
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.import_graph_def(graph_def, name="")
    with tf.compat.v1.Session(graph=graph) as session:
        return np.asarray(session.run(tensor, feed_dict=feed))


def onnx_value(model_path: Path, tf_node: str, tensor: str, feed: dict[str, np.ndarray]) -> np.ndarray:
    """What the ONNX node computing `tf_node` gives for TF's `tensor`, as the emulation means it: the tensor of that
    name where the emulation's Casts carry it, else the node's output after its rounding, else the output itself
    (rounded as the emulation would where the rounding was moved past the next op)."""
    import onnx
    import onnxruntime

    from atc_wrap.standin.emulation import emulated_value, tensors_rounded_later

    model: Any = onnx.load(str(model_path))
    output = onnx_node(model, tf_node).output[0]
    names = {name for node in model.graph.node for name in node.output}
    wanted = next(name for name in (tensor, f"{output}/rounded", output) if name in names)
    del model.graph.output[:]
    model.graph.output.append(onnx.helper.make_empty_tensor_value_info(wanted))
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    value = np.asarray(emulated_value(session.run([wanted], feed)[0], wanted, tensors_rounded_later(model)))
    return value.transpose(0, 2, 3, 1) if value.ndim == 4 else value


def cosine_and_red(actual: np.ndarray, golden: np.ndarray) -> tuple[float, float]:
    a, g = actual.astype(np.float64).ravel(), golden.astype(np.float64).ravel()
    norms = float(np.linalg.norm(a) * np.linalg.norm(g))
    cosine = float(a @ g) / norms if norms else float("nan")
    red = float(np.linalg.norm(a - g) / np.linalg.norm(g)) if np.any(g) else float("nan")
    return cosine, red


def damage_at_its_layer(pb: Path, model_path: Path, tf_node: str, tensor: str, input_tensor: str,
                        batch: np.ndarray) -> tuple[float, float]:
    """(cosine, RED) of the damaged ONNX node's value of `tensor` against TensorFlow's, on `batch`."""
    golden = tf_value(pb, tensor, {input_tensor: batch})
    actual = onnx_value(model_path, tf_node, tensor, {input_tensor: batch})  # tf2onnx keeps the input's name
    return cosine_and_red(actual, golden)
