"""Healthy models of several families for the expected-error band: a deep ResNet-style network whose fp16 error
grows with depth, a MobileNet-style depthwise stack, a self-attention block, and the corpus's CNN and MLP. Each is
built in a dtype: float32 for the model to convert, float16 for TensorFlow's own fp16 computation of the same graph
(same names, the weights rounded), an undamaged fp16 implementation other than the stand-in's emulation, which
`benchmarks/measure_bands.py` sets against the band to measure the factor.

Weights are random; batch norms are inference-mode (is_training folded) with statistics taken from the
activations TensorFlow computes on a calibration batch, as a trained network's are, so that activations keep their
scale through the depth.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

Builder = Callable[[Any, Any], None]  # (tf, dtype) -> the graph built in the default graph


@dataclass(frozen=True)
class Family:
    name: str
    build: Builder
    input_name: str
    input_shape: tuple[int, ...]
    output_name: str


def _weights(seed: int) -> Callable[..., np.ndarray]:
    rng = np.random.default_rng(seed)

    def draw(*shape: int, gain: float = 1.0) -> np.ndarray:
        fan_in = int(np.prod(shape[:-1])) or 1
        return rng.normal(scale=gain * np.sqrt(2.0 / fan_in), size=shape).astype(np.float32)

    return draw


class _Calibrated:
    """Batch-norm statistics from the activations themselves: each batch norm's input is computed by TensorFlow on
    a fixed calibration batch (in float32) as the graph is built, its mean and variance become the constants."""

    def __init__(self, tf: Any, feed: np.ndarray) -> None:
        self.tf, self.feed = tf, feed

    def stats(self, tensor: Any, placeholder: Any) -> tuple[np.ndarray, np.ndarray]:
        tf = self.tf
        graph = tensor.graph
        with tf.compat.v1.Session(graph=graph) as session:
            value = session.run(tensor, {placeholder: self.feed.astype(placeholder.dtype.as_numpy_dtype)})
        axes = tuple(range(value.ndim - 1))
        value = value.astype(np.float64)
        return value.mean(axis=axes).astype(np.float32), value.var(axis=axes).astype(np.float32)


def _batch_norm(tf: Any, h: Any, x: Any, calibrated: _Calibrated, name: str, rng: np.random.Generator,
                offset: float = 0.0) -> Any:
    channels = int(h.shape[-1])
    mean, variance = calibrated.stats(h, x)
    scale = rng.uniform(0.8, 1.2, channels).astype(np.float32)
    offsets = (offset + rng.normal(scale=0.1, size=channels)).astype(np.float32)
    y, _, _ = tf.compat.v1.nn.fused_batch_norm(h, scale, offsets, mean, variance, epsilon=1e-3, is_training=False,
                                               name=name)
    return y


def calibration_batch(shape: tuple[int, ...]) -> np.ndarray:
    return np.random.default_rng(123).normal(size=shape).astype(np.float32)


def build_resnet(blocks: int = 10, width: int = 16, offset: float = 60.0) -> Builder:
    """images (2,16,16,3) -> conv 3x3 + bn + relu -> `blocks` residual blocks (conv 3x3-bn-relu-conv 1x1-bn, added
    to the block's input, relu) -> mean over H, W -> dense -> softmax. The first batch norm of each block shifts its
    output `offset` times its spread off 0, the next takes that mean away again, as in trained networks whose
    activations sit off 0: fp16's rounding of those values, relative to the spread the next batch norm leaves, is
    the error that grows with depth, past msit's RED 0.05 from the seventh block of a healthy force_fp16
    conversion, while the output stays under it."""
    def build(tf: Any, dtype: Any) -> None:
        draw = _weights(7)
        rng = np.random.default_rng(8)
        x = tf.compat.v1.placeholder(dtype, [2, 16, 16, 3], name="images")
        calibrated = _Calibrated(tf, calibration_batch((2, 16, 16, 3)))

        def conv(h: Any, channels: int, name: str, size: int = 3) -> Any:
            kernel = draw(size, size, int(h.shape[-1]), channels)
            return tf.nn.conv2d(h, tf.constant(kernel.astype(dtype.as_numpy_dtype)), 1, "SAME", name=name)

        h = tf.nn.relu(_batch_norm(tf, conv(x, width, "stem/conv"), x, calibrated, "stem/bn", rng), name="stem/relu")
        for index in range(blocks):
            scope = f"block{index + 1}"
            inner = tf.nn.relu(_batch_norm(tf, conv(h, width, f"{scope}/conv1"), x, calibrated, f"{scope}/bn1", rng,
                                           offset), name=f"{scope}/relu1")
            inner = _batch_norm(tf, conv(inner, width, f"{scope}/conv2", 1), x, calibrated, f"{scope}/bn2", rng)
            h = tf.nn.relu(tf.add(h, inner, name=f"{scope}/add"), name=f"{scope}/relu")
        pooled = tf.reduce_mean(h, axis=[1, 2], name="pool")
        logits = tf.nn.bias_add(tf.matmul(pooled, tf.constant(draw(width, 10).astype(dtype.as_numpy_dtype)),
                                          name="fc/matmul"),
                                tf.constant(np.zeros(10, dtype.as_numpy_dtype)), name="fc/bias")
        tf.nn.softmax(logits, name="probs")

    return build


def build_depthwise(tf: Any, dtype: Any) -> None:
    """images (2,16,16,3) -> conv -> four MobileNet blocks (depthwise 3x3 + bn + relu6, pointwise 1x1 + bn + relu6)
    -> mean -> dense -> softmax."""
    draw = _weights(11)
    rng = np.random.default_rng(12)
    x = tf.compat.v1.placeholder(dtype, [2, 16, 16, 3], name="images")
    calibrated = _Calibrated(tf, calibration_batch((2, 16, 16, 3)))
    np_dtype = dtype.as_numpy_dtype
    h = tf.nn.conv2d(x, tf.constant(draw(3, 3, 3, 16).astype(np_dtype)), 1, "SAME", name="stem/conv")
    h = tf.nn.relu6(_batch_norm(tf, h, x, calibrated, "stem/bn", rng), name="stem/relu6")
    for index in range(4):
        scope = f"dw{index + 1}"
        d = tf.nn.depthwise_conv2d(h, tf.constant(draw(3, 3, 16, 1).astype(np_dtype)), [1, 1, 1, 1], "SAME",
                                   name=f"{scope}/depthwise")
        d = tf.nn.relu6(_batch_norm(tf, d, x, calibrated, f"{scope}/bn1", rng), name=f"{scope}/relu6a")
        p = tf.nn.conv2d(d, tf.constant(draw(1, 1, 16, 16).astype(np_dtype)), 1, "SAME", name=f"{scope}/pointwise")
        h = tf.nn.relu6(_batch_norm(tf, p, x, calibrated, f"{scope}/bn2", rng), name=f"{scope}/relu6b")
    pooled = tf.reduce_mean(h, axis=[1, 2], name="pool")
    logits = tf.matmul(pooled, tf.constant(draw(16, 10).astype(np_dtype)), name="fc/matmul")
    tf.nn.softmax(logits, name="probs")


def build_attention(tf: Any, dtype: Any) -> None:
    """tokens (2,8,32) -> one self-attention head (q, k, v projections, softmax(q k^T / sqrt(32)) v, output
    projection) added to the input -> layer norm -> feed-forward (dense 32x64, tanh, dense 64x32) added -> mean."""
    draw = _weights(21)
    np_dtype = dtype.as_numpy_dtype
    x = tf.compat.v1.placeholder(dtype, [2, 8, 32], name="tokens")

    def dense(h: Any, rows: int, cols: int, name: str) -> Any:
        return tf.tensordot(h, tf.constant(draw(rows, cols).astype(np_dtype)), axes=1, name=name)

    q, k, v = (dense(x, 32, 32, f"attn/{n}") for n in ("query", "key", "value"))
    scores = tf.multiply(tf.matmul(q, k, transpose_b=True, name="attn/scores"), np.asarray(32 ** -0.5, np_dtype),
                         name="attn/scaled")
    weights = tf.nn.softmax(scores, name="attn/softmax")
    context = tf.matmul(weights, v, name="attn/context")
    h = tf.add(x, dense(context, 32, 32, "attn/output"), name="attn/residual")
    mean = tf.reduce_mean(h, axis=-1, keepdims=True, name="norm/mean")
    centred = tf.subtract(h, mean, name="norm/centred")
    variance = tf.reduce_mean(tf.square(centred, name="norm/square"), axis=-1, keepdims=True, name="norm/variance")
    normed = tf.multiply(centred, tf.math.rsqrt(variance + np.asarray(1e-5, np_dtype), name="norm/rsqrt"),
                         name="norm/out")
    ff = tf.tanh(dense(normed, 32, 64, "ffn/in"), name="ffn/tanh")
    out = tf.add(normed, dense(ff, 64, 32, "ffn/out"), name="ffn/residual")
    tf.reduce_mean(out, axis=1, name="pooled")


def _corpus(build32: Callable[[Any], None]) -> Builder:
    def build(tf: Any, dtype: Any) -> None:
        if dtype != tf.float32:
            raise ValueError("the corpus's models are built in float32 only")
        build32(tf)
    return build


def families() -> tuple[Family, ...]:
    from tests.infer.compare.corpus import build_cnn, build_mlp

    return (Family("resnet", build_resnet(), "images:0", (2, 16, 16, 3), "probs:0"),
            Family("depthwise", build_depthwise, "images:0", (2, 16, 16, 3), "probs:0"),
            Family("attention", build_attention, "tokens:0", (2, 8, 32), "pooled:0"),
            Family("cnn", _corpus(build_cnn), "images:0", (2, 8, 8, 3), "probs:0"),
            Family("mlp", _corpus(build_mlp), "features:0", (2, 16), "scores:0"))
