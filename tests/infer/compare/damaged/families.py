"""Five model families as tiny TF1 graphs of constants: a plain CNN, a residual net with batch norm, a depthwise-
separable (MobileNet-style) net, a dense net with layer norm and softmax, and a self-attention block over a
sequence. Each is small enough that freeze, convert and a layer-wise compare take a second or two, and each is named
layer by layer (`scope/op`) so that a case can say which layer it damaged.

`Family.build(tf)` builds the graph in the default graph; `frozen_family` writes it as a pb and freezes it with
`infer.freeze_model`, and writes its inputs as a `.npy` for `infer.dump_bins`, as a user would."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Family:
    name: str
    build: Callable[[Any], None]
    input_tensor: str
    input_shape: tuple[int, ...]
    output_tensor: str
    description: str


class _Weights:
    """Reproducible constants for one graph: each family draws from its own seed."""

    def __init__(self, tf: Any, seed: int) -> None:
        self.tf, self.rng = tf, np.random.default_rng(seed)

    def normal(self, *shape: int, scale: float | None = None) -> Any:
        fan_in = int(np.prod(shape[:-1])) if len(shape) > 1 else 1
        spread = scale if scale is not None else float(np.sqrt(2.0 / fan_in))
        return self.tf.constant(self.rng.normal(scale=spread, size=shape).astype(np.float32))

    def uniform(self, low: float, high: float, *shape: int) -> Any:
        return self.tf.constant(self.rng.uniform(low, high, size=shape).astype(np.float32))


def _conv(tf: Any, w: _Weights, x: Any, scope: str, k: int, cin: int, cout: int, *, stride: int = 1) -> Any:
    h = tf.nn.conv2d(x, w.normal(k, k, cin, cout), stride, "SAME", name=f"{scope}/conv")
    return tf.nn.bias_add(h, w.normal(cout, scale=0.1), name=f"{scope}/bias")


def _batch_norm(tf: Any, w: _Weights, x: Any, scope: str, channels: int) -> Any:
    out, _, _ = tf.compat.v1.nn.fused_batch_norm(
        x, w.uniform(0.6, 1.4, channels), w.normal(channels, scale=0.1), w.normal(channels, scale=0.1),
        w.uniform(0.5, 1.5, channels), epsilon=1e-3, is_training=False, name=f"{scope}/bn")
    return out


def _dense(tf: Any, w: _Weights, x: Any, scope: str, cin: int, cout: int) -> Any:
    h = tf.matmul(x, w.normal(cin, cout), name=f"{scope}/matmul")
    return tf.nn.bias_add(h, w.normal(cout, scale=0.1), name=f"{scope}/bias")


def build_cnn(tf: Any) -> None:
    """images (2,16,16,3) -> [conv 3x3 + bias -> relu] x3 with a max pool after the second -> mean over H, W ->
    dense + bias -> softmax."""
    w = _Weights(tf, 10)
    x = tf.compat.v1.placeholder(tf.float32, [2, 16, 16, 3], name="images")
    h = tf.nn.relu(_conv(tf, w, x, "conv1", 3, 3, 8), name="conv1/relu")
    h = tf.nn.relu(_conv(tf, w, h, "conv2", 3, 8, 16), name="conv2/relu")
    h = tf.nn.max_pool2d(h, 2, 2, "VALID", name="pool1")
    h = tf.nn.relu(_conv(tf, w, h, "conv3", 3, 16, 16), name="conv3/relu")
    h = tf.reduce_mean(h, axis=[1, 2], name="gap")
    tf.nn.softmax(_dense(tf, w, h, "fc", 16, 10), name="probs")


def build_resnet(tf: Any) -> None:
    """images (2,16,16,3) -> stem conv + batch norm + relu -> four residual blocks (conv, bn, relu, conv, bn, add the
    block's input, relu) -> mean over H, W -> dense + bias -> softmax. Deep enough for fp16's error to grow."""
    w = _Weights(tf, 11)
    x = tf.compat.v1.placeholder(tf.float32, [2, 16, 16, 3], name="images")
    h = tf.nn.relu(_batch_norm(tf, w, _conv(tf, w, x, "stem", 3, 3, 16), "stem", 16), name="stem/relu")
    for block in range(1, 5):
        scope = f"block{block}"
        r = tf.nn.relu(_batch_norm(tf, w, _conv(tf, w, h, f"{scope}/a", 3, 16, 16), f"{scope}/a", 16),
                       name=f"{scope}/a/relu")
        r = _batch_norm(tf, w, _conv(tf, w, r, f"{scope}/b", 3, 16, 16), f"{scope}/b", 16)
        h = tf.nn.relu(tf.add(h, r, name=f"{scope}/add"), name=f"{scope}/relu")
    h = tf.reduce_mean(h, axis=[1, 2], name="gap")
    tf.nn.softmax(_dense(tf, w, h, "fc", 16, 10), name="probs")


def build_mobilenet(tf: Any) -> None:
    """images (2,16,16,3) -> stem conv + bias -> relu6 -> two depthwise-separable blocks (depthwise 3x3 + batch norm
    + relu6, pointwise 1x1 + batch norm + relu6) -> mean over H, W -> dense + bias -> softmax."""
    w = _Weights(tf, 12)
    x = tf.compat.v1.placeholder(tf.float32, [2, 16, 16, 3], name="images")
    h = tf.nn.relu6(_conv(tf, w, x, "stem", 3, 3, 16, stride=2), name="stem/relu6")
    for block in range(1, 3):
        scope = f"sep{block}"
        d = tf.nn.depthwise_conv2d(h, w.normal(3, 3, 16, 1, scale=0.4), [1, 1, 1, 1], "SAME", name=f"{scope}/dw")
        h = tf.nn.relu6(_batch_norm(tf, w, d, f"{scope}/dw", 16), name=f"{scope}/dw/relu6")
        p = tf.nn.conv2d(h, w.normal(1, 1, 16, 16), 1, "SAME", name=f"{scope}/pw")
        h = tf.nn.relu6(_batch_norm(tf, w, p, f"{scope}/pw", 16), name=f"{scope}/pw/relu6")
    h = tf.reduce_mean(h, axis=[1, 2], name="gap")
    tf.nn.softmax(_dense(tf, w, h, "fc", 16, 10), name="probs")


def _layer_norm(tf: Any, w: _Weights, x: Any, scope: str, width: int) -> Any:
    mean = tf.reduce_mean(x, axis=-1, keepdims=True, name=f"{scope}/mean")
    centred = tf.subtract(x, mean, name=f"{scope}/centred")
    variance = tf.reduce_mean(tf.square(centred, name=f"{scope}/square"), axis=-1, keepdims=True,
                              name=f"{scope}/variance")
    padded = tf.add(variance, 1e-5, name=f"{scope}/eps")
    scaled = tf.multiply(centred, tf.math.rsqrt(padded, name=f"{scope}/rsqrt"), name=f"{scope}/normed")
    gamma = w.uniform(0.8, 1.2, width)
    beta = w.normal(width, scale=0.1)
    return tf.add(tf.multiply(scaled, gamma, name=f"{scope}/gamma"), beta, name=f"{scope}/beta")


def build_mlp(tf: Any) -> None:
    """features (4,32) -> dense + bias -> layer norm -> relu -> dense + bias -> tanh -> dense + bias -> softmax."""
    w = _Weights(tf, 13)
    x = tf.compat.v1.placeholder(tf.float32, [4, 32], name="features")
    h = _layer_norm(tf, w, _dense(tf, w, x, "dense1", 32, 64), "ln1", 64)
    h = tf.nn.relu(h, name="dense1/relu")
    h = tf.tanh(_dense(tf, w, h, "dense2", 64, 32), name="dense2/tanh")
    tf.nn.softmax(_dense(tf, w, h, "dense3", 32, 10), name="probs")


def build_attention(tf: Any) -> None:
    """tokens (2,8,16) -> one self-attention block: query, key and value projections, scores q k^T / 4, softmax,
    weighted sum of values, output projection, residual add -> mean over the sequence -> dense + bias -> softmax."""
    w = _Weights(tf, 14)
    x = tf.compat.v1.placeholder(tf.float32, [2, 8, 16], name="tokens")
    flat = tf.reshape(x, [16, 16], name="attn/flat")

    def projection(scope: str) -> Any:
        return tf.reshape(_dense(tf, w, flat, scope, 16, 16), [2, 8, 16], name=f"{scope}/seq")

    q, k, v = projection("attn/query"), projection("attn/key"), projection("attn/value")
    scores = tf.multiply(tf.matmul(q, k, transpose_b=True, name="attn/qk"), 0.25, name="attn/scores")
    weights = tf.nn.softmax(scores, name="attn/softmax")
    context = tf.reshape(tf.matmul(weights, v, name="attn/context"), [16, 16], name="attn/context_flat")
    projected = tf.reshape(_dense(tf, w, context, "attn/out", 16, 16), [2, 8, 16], name="attn/out/seq")
    h = tf.add(x, projected, name="attn/residual")
    h = tf.reduce_mean(h, axis=1, name="pool")
    tf.nn.softmax(_dense(tf, w, h, "fc", 16, 10), name="probs")


FAMILIES: dict[str, Family] = {family.name: family for family in (
    Family("cnn", build_cnn, "images:0", (2, 16, 16, 3), "probs:0", "plain CNN: conv, relu, max pool, dense"),
    Family("resnet", build_resnet, "images:0", (2, 16, 16, 3), "probs:0",
           "residual net: conv + batch norm, four residual blocks"),
    Family("mobilenet", build_mobilenet, "images:0", (2, 16, 16, 3), "probs:0",
           "depthwise-separable: depthwise 3x3 and pointwise 1x1 with batch norm and relu6"),
    Family("mlp", build_mlp, "features:0", (4, 32), "probs:0", "dense net with layer norm, tanh and softmax"),
    Family("attention", build_attention, "tokens:0", (2, 8, 16), "probs:0",
           "self-attention block: projections, q k^T, softmax, residual"),
)}


def frozen_family(family: Family, folder: Path, *, batches: int = 2, seed: int = 0) -> tuple[Any, Path]:
    """`family` written as a pb under folder/source, frozen by `infer.freeze_model` into folder/frozen, and its
    inputs (`batches` batches of standard normal values) dumped by `infer.dump_bins` into folder/bins. Returns the
    frozen model's contract and the dataset's folder."""
    import tensorflow as tf

    import infer

    graph = tf.Graph()
    with graph.as_default():
        family.build(tf)
    source = folder / "source"
    source.mkdir(parents=True, exist_ok=True)
    tf.io.write_graph(graph.as_graph_def(), str(source), "model.pb", as_text=False)
    frozen = infer.freeze_model(source / "model.pb", folder / "frozen", infer.FreezeOptions(
        outputs=(family.output_tensor,)))
    shape = (family.input_shape[0] * batches, *family.input_shape[1:])
    values = np.random.default_rng(seed).normal(size=shape).astype(np.float32)
    np.save(source / "inputs.npy", values)
    dumped = infer.dump_bins(frozen.contract, infer.DumpOptions(output=folder / "bins",
                                                                sources=(("", str(source / "inputs.npy")),)))
    return frozen.contract, dumped.manifest.root
