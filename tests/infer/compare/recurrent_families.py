"""Four families of models infer's layer-by-layer comparison was blind inside (issue 38), written here, frozen:

- `crnn`: a CRNN-like text recogniser: two conv + relu + max pool blocks over a (2,16,32,1) line image, the
  width as time steps, a bidirectional LSTM (TF 1.x's dynamic_rnn: a while loop), a dense layer per step;
- `gru`: a GRU text classifier: embeddings of int32 ids, a GRU over the steps, its final state through a dense
  layer and a softmax; the state is an output too;
- `bert`: a 2-layer BERT-like encoder: 4 attention heads (scores [B,H,S,S] with S = 16 = the head count x the head
  width, so a shape alone fits more than one reading), the mask adder (1 - mask) * -10000 per layer, softmax, layer
  norms, a feed-forward block, a pooled tanh and a classifier;
- `unet`: a small U-Net: conv blocks down with max pools, up again through a bilinear resize and a conv2d_transpose,
  skip concatenations, a 1x1 conv and a sigmoid.

`FAMILIES` maps each to (builder, inputs, outputs); `write_family` freezes one (variables folded) with its contract,
`family_bins` writes a dataset for it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from infer.contract import ModelContract, SourceInfo


def _init(tf: Any, seed: int) -> Any:
    return tf.compat.v1.glorot_uniform_initializer(seed=seed)


def _recurrence(tf: Any, steps: Any, units: int, name: str, cell: Callable[[Any, Any], tuple[Any, Any]],
                state: Any, reverse: bool) -> tuple[Any, Any]:
    """What TF 1.x's dynamic_rnn writes, by hand (its cells need Keras 2): a while loop over the time steps
    reading them from a TensorArray and writing each step's output into another, the backward direction over the
    reversed steps as bidirectional_dynamic_rnn runs it; (outputs [B,T,U], final state)."""
    tf1 = tf.compat.v1
    time = int(steps.shape[1])
    with tf1.variable_scope(name):
        major = tf.transpose(steps, [1, 0, 2], name="time_major")
        if reverse:
            major = tf.reverse(major, [0], name="reversed")
        inputs = tf1.TensorArray(tf.float32, size=time).unstack(major)
        outputs = tf1.TensorArray(tf.float32, size=time)

        def body(t: Any, carried: Any, written: Any) -> tuple[Any, Any, Any]:
            output, carried = cell(inputs.read(t), carried)
            return t + 1, carried, written.write(t, output)

        _, final, written = tf1.while_loop(lambda t, *_: t < time, body, (tf.constant(0), state, outputs),
                                           name="while")
        stacked = written.stack()
        if reverse:
            stacked = tf.reverse(stacked, [0], name="unreversed")
        return tf.transpose(stacked, [1, 0, 2], name="outputs"), final


def _lstm(tf: Any, steps: Any, units: int, name: str, seed: int, reverse: bool = False) -> tuple[Any, Any]:
    tf1 = tf.compat.v1
    features = int(steps.shape[-1])
    with tf1.variable_scope(name):
        kernel = tf1.get_variable("kernel", [features + units, 4 * units], initializer=_init(tf, seed))
        bias = tf1.get_variable("bias", [4 * units], initializer=tf1.zeros_initializer())

    def cell(x: Any, carried: Any) -> tuple[Any, Any]:
        c, h = carried
        gates = tf.nn.bias_add(tf.matmul(tf.concat([x, h], 1), kernel), bias)
        i, j, f, o = tf.split(gates, 4, axis=1)
        c = tf.sigmoid(f + 1.0) * c + tf.sigmoid(i) * tf.tanh(j)
        h = tf.sigmoid(o) * tf.tanh(c)
        return h, (c, h)

    zeros = tf.zeros([int(steps.shape[0]), units])
    return _recurrence(tf, steps, units, name, cell, (zeros, zeros), reverse)


def _gru(tf: Any, steps: Any, units: int, name: str, seed: int) -> tuple[Any, Any]:
    tf1 = tf.compat.v1
    features = int(steps.shape[-1])
    with tf1.variable_scope(name):
        gate_kernel = tf1.get_variable("gates/kernel", [features + units, 2 * units], initializer=_init(tf, seed))
        gate_bias = tf1.get_variable("gates/bias", [2 * units], initializer=tf1.ones_initializer())
        kernel = tf1.get_variable("candidate/kernel", [features + units, units], initializer=_init(tf, seed + 1))
        bias = tf1.get_variable("candidate/bias", [units], initializer=tf1.zeros_initializer())

    def cell(x: Any, h: Any) -> tuple[Any, Any]:
        gates = tf.sigmoid(tf.nn.bias_add(tf.matmul(tf.concat([x, h], 1), gate_kernel), gate_bias))
        r, u = tf.split(gates, 2, axis=1)
        candidate = tf.tanh(tf.nn.bias_add(tf.matmul(tf.concat([x, r * h], 1), kernel), bias))
        h = u * h + (1 - u) * candidate
        return h, h

    return _recurrence(tf, steps, units, name, cell, tf.zeros([int(steps.shape[0]), units]), False)


def build_crnn(tf: Any) -> None:
    tf1 = tf.compat.v1
    image = tf1.placeholder(tf.float32, [2, 16, 32, 1], name="image")
    hidden = image
    for block, channels in enumerate((8, 16)):
        with tf1.variable_scope(f"conv{block}"):
            kernel = tf1.get_variable("kernel", [3, 3, hidden.shape[-1], channels], initializer=_init(tf, block))
            bias = tf1.get_variable("bias", [channels], initializer=tf1.constant_initializer(0.05))
            hidden = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(hidden, kernel, 1, "SAME"), bias), name="relu")
            hidden = tf.nn.max_pool2d(hidden, 2, 2, "SAME", name="pool")
    # (2,4,8,16): the width is time, the height and channels each step's features
    steps = tf.reshape(tf.transpose(hidden, [0, 2, 1, 3], name="to_steps"), [2, 8, 4 * 16], name="sequence")
    forward, _ = _lstm(tf, steps, 12, "blstm/forward", 5)
    backward, _ = _lstm(tf, steps, 12, "blstm/backward", 6, reverse=True)
    joined = tf.concat([forward, backward], axis=2, name="blstm_out")
    weights = tf1.get_variable("logits/kernel", [24, 10], initializer=_init(tf, 7))
    logits = tf.einsum("btf,fc->btc", joined, weights, name="logits")
    tf.identity(logits, name="out")


def build_gru(tf: Any) -> None:
    tf1 = tf.compat.v1
    ids = tf1.placeholder(tf.int32, [2, 12], name="ids")
    table = tf1.get_variable("embedding", [40, 16], initializer=_init(tf, 11))
    embedded = tf.gather(table, ids, name="embedded")
    _, state = _gru(tf, embedded, 20, "gru", 12)
    state = tf.reshape(state, [2, 20], name="state")  # a static shape past the loop, once the graph is read back
    weights = tf1.get_variable("head/kernel", [20, 5], initializer=_init(tf, 13))
    bias = tf1.get_variable("head/bias", [5], initializer=tf1.zeros_initializer())
    tf.nn.softmax(tf.matmul(state, weights) + bias, name="probs")


def build_bert(tf: Any) -> None:
    tf1 = tf.compat.v1
    batch, length, heads, size = 2, 16, 4, 4
    width = heads * size
    ids = tf1.placeholder(tf.int32, [batch, length], name="input_ids")
    mask = tf1.placeholder(tf.int32, [batch, length], name="input_mask")
    words = tf1.get_variable("embeddings/word", [50, width], initializer=_init(tf, 21))
    positions = tf1.get_variable("embeddings/position", [length, width], initializer=_init(tf, 22))
    hidden = tf.gather(words, ids) + positions[None]

    def layer_norm(x: Any, name: str) -> Any:
        with tf1.variable_scope(name):
            mean, variance = tf.nn.moments(x, axes=[-1], keepdims=True)
            gamma = tf1.get_variable("gamma", [width], initializer=tf1.ones_initializer())
            beta = tf1.get_variable("beta", [width], initializer=tf1.zeros_initializer())
            return (x - mean) * tf.math.rsqrt(variance + 1e-6) * gamma + beta

    def heads_of(x: Any) -> Any:  # [B,S,W] -> [B,H,S,D]
        return tf.transpose(tf.reshape(x, [batch, length, heads, size]), [0, 2, 1, 3])

    hidden = layer_norm(hidden, "embeddings/norm")
    for layer in range(2):
        with tf1.variable_scope(f"layer_{layer}"):
            flat = tf.reshape(hidden, [batch * length, width])
            query, key, value = (heads_of(tf.reshape(tf.matmul(flat, tf1.get_variable(
                name, [width, width], initializer=_init(tf, 30 + 3 * layer + k))), [batch, length, width]))
                for k, name in enumerate(("query", "key", "value")))
            scores = tf.multiply(tf.matmul(query, key, transpose_b=True), 1.0 / np.sqrt(size), name="scores")
            adder = (1.0 - tf.cast(mask[:, None, None, :], tf.float32)) * -10000.0
            probs = tf.nn.softmax(tf.add(scores, adder, name="masked"), name="probs")
            context = tf.reshape(tf.transpose(tf.matmul(probs, value), [0, 2, 1, 3]), [batch * length, width])
            attended = tf.matmul(context, tf1.get_variable("output", [width, width], initializer=_init(tf, 40 + layer)))
            hidden = layer_norm(tf.reshape(attended, [batch, length, width]) + hidden, "attention_norm")
            inner = tf.nn.relu(tf.einsum("bsw,wi->bsi", hidden, tf1.get_variable(
                "intermediate", [width, 2 * width], initializer=_init(tf, 50 + layer))))
            outer = tf.einsum("bsi,iw->bsw", inner, tf1.get_variable("ffn_output", [2 * width, width],
                                                                     initializer=_init(tf, 60 + layer)))
            hidden = layer_norm(outer + hidden, "output_norm")
    pooled = tf.tanh(tf.matmul(hidden[:, 0], tf1.get_variable("pooler", [width, width], initializer=_init(tf, 70))))
    tf.nn.softmax(tf.matmul(pooled, tf1.get_variable("classifier", [width, 3], initializer=_init(tf, 71))),
                  name="class_probs")


def build_unet(tf: Any) -> None:
    tf1 = tf.compat.v1
    image = tf1.placeholder(tf.float32, [2, 16, 16, 3], name="image")

    def conv(x: Any, channels: int, name: str, size: int = 3) -> Any:
        with tf1.variable_scope(name):
            kernel = tf1.get_variable("kernel", [size, size, x.shape[-1], channels],
                                      initializer=_init(tf, sum(map(ord, name))))
            bias = tf1.get_variable("bias", [channels], initializer=tf1.constant_initializer(0.02))
            return tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, kernel, 1, "SAME"), bias), name="relu")

    down1 = conv(image, 8, "down1")
    down2 = conv(tf.nn.max_pool2d(down1, 2, 2, "SAME", name="pool1"), 16, "down2")
    bottom = conv(tf.nn.max_pool2d(down2, 2, 2, "SAME", name="pool2"), 16, "bottom")
    resized = tf1.image.resize_bilinear(bottom, [8, 8], name="up2/resize")
    up2 = conv(tf.concat([resized, down2], axis=3, name="up2/skip"), 16, "up2")
    with tf1.variable_scope("up1"):
        kernel = tf1.get_variable("transpose_kernel", [2, 2, 8, 16], initializer=_init(tf, 81))
        transposed = tf.nn.conv2d_transpose(up2, kernel, [2, 16, 16, 8], [1, 2, 2, 1], "SAME", name="transposed")
    up1 = conv(tf.concat([transposed, down1], axis=3, name="up1/skip"), 8, "up1")
    logits = conv(up1, 1, "head", size=1)
    tf.sigmoid(logits, name="mask")


FAMILIES: dict[str, tuple[Callable[[Any], None], tuple[str, ...], tuple[str, ...]]] = {
    "crnn": (build_crnn, ("image:0",), ("out:0",)),
    "gru": (build_gru, ("ids:0",), ("probs:0", "state:0")),
    "bert": (build_bert, ("input_ids:0", "input_mask:0"), ("class_probs:0",)),
    "unet": (build_unet, ("image:0",), ("mask:0",)),
}


def write_family(folder: Path, name: str) -> ModelContract:
    """The family `name` built (TF 1.x control flow, as dynamic_rnn wrote it), its variables folded into constants,
    written as folder/model.pb with its contract."""
    import tensorflow as tf

    from tests.builders.frozen import write_pb_and_contract

    build, inputs, outputs = FAMILIES[name]
    tf1 = tf.compat.v1
    tf1.disable_control_flow_v2()
    try:
        graph = tf.Graph()
        with graph.as_default():
            tf1.set_random_seed(38)
            build(tf)
            with tf1.Session(graph=graph) as session:
                session.run(tf1.global_variables_initializer())
                frozen = tf1.graph_util.convert_variables_to_constants(
                    session, graph.as_graph_def(), [output.split(":")[0] for output in outputs])
    finally:
        tf1.enable_control_flow_v2()
    source = SourceInfo(path=str(folder / "model.pb"), kind="pb", tf_version=tf.__version__,
                        frozen_with_tf=tf.__version__)
    return write_pb_and_contract(folder, frozen, inputs, outputs, source)


def family_feeds(contract: ModelContract, seed: int = 0) -> dict[str, np.ndarray]:
    """One batch: images and sequences normal, ids within the vocabulary, masks with padding at the end."""
    rng = np.random.default_rng(seed)
    found: dict[str, np.ndarray] = {}
    for spec in contract.inputs:
        shape = tuple(int(d or 2) for d in spec.shape)
        if spec.name == "input_mask:0":
            found[spec.name] = (np.arange(shape[1])[None] < rng.integers(6, shape[1], (shape[0], 1))).astype(np.int32)
        elif spec.dtype == "int32":
            found[spec.name] = rng.integers(0, 40, shape).astype(np.int32)
        else:
            found[spec.name] = rng.standard_normal(shape).astype(np.float32)
    return found


def family_bins(folder: Path, contract: ModelContract, batches: int = 2) -> Path:
    """A dataset of `batches` batches of `family_feeds` for the contract's inputs."""
    from binio.binfile import write_bin
    from binio.manifest import BinEntry, DatasetManifest, InputManifest, bin_file_name

    per_input: dict[str, list[BinEntry]] = {spec.name: [] for spec in contract.inputs}
    for index in range(batches):
        for name, value in family_feeds(contract, seed=index).items():
            short = name.split(":")[0]
            per_input[name].append(BinEntry(bin_file_name(index), write_bin(folder / short / bin_file_name(index),
                                                                             value), value.shape[0]))
    inputs = tuple(InputManifest(spec.name, spec.name.split(":")[0], spec.dtype,
                                 tuple(int(d or 2) for d in spec.shape), spec.layout, tuple(per_input[spec.name]))
                   for spec in contract.inputs)
    first = contract.inputs[0]
    DatasetManifest(root=folder, batch=int(first.shape[0] or 2), samples=int(first.shape[0] or 2) * batches,
                    inputs=inputs).save()
    return folder
