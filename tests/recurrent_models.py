"""A recurrent model as TF1 code writes it: a bidirectional `tf.compat.v1.nn.dynamic_rnn` over an LSTM cell, under
control flow v1 (Enter/Exit/TensorArrayV3) or v2 (While over TensorList ops, TF 2.x's default).

The cell is written by hand (TF 2.16+'s `tf.compat.v1.nn.rnn_cell` needs tf_keras): dynamic_rnn takes any object
with `state_size`, `output_size`, `zero_state` and `__call__`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.models import ReferenceModel

UNITS = 4
STEPS = 6
FEATURES = 3


class _LstmCell:
    """An LSTM cell (c, h) of raw ops, its weights made under the current variable scope."""

    def __init__(self, tf: Any, scope: str) -> None:
        self._tf = tf
        self._scope = scope

    @property
    def state_size(self) -> tuple[int, int]:
        return (UNITS, UNITS)

    @property
    def output_size(self) -> int:
        return UNITS

    def zero_state(self, batch: Any, dtype: Any) -> tuple[Any, Any]:
        return (self._tf.zeros([batch, UNITS], dtype), self._tf.zeros([batch, UNITS], dtype))

    def get_initial_state(self, inputs: Any = None, batch_size: Any = None, dtype: Any = None) -> tuple[Any, Any]:
        return self.zero_state(batch_size, dtype)

    def __call__(self, inputs: Any, state: tuple[Any, Any], scope: Any = None) -> tuple[Any, tuple[Any, Any]]:
        tf = self._tf
        tf1 = tf.compat.v1
        with tf1.variable_scope(self._scope, reuse=tf1.AUTO_REUSE):
            kernel = tf1.get_variable("kernel", [FEATURES + UNITS, 4 * UNITS],
                                      initializer=tf1.glorot_uniform_initializer(seed=7))
            bias = tf1.get_variable("bias", [4 * UNITS], initializer=tf1.random_normal_initializer(stddev=0.1))
        c, h = state
        gates = tf.nn.bias_add(tf.matmul(tf.concat([inputs, h], 1), kernel), bias)
        i, j, f, o = tf.split(gates, 4, axis=1)
        c = tf.sigmoid(f + 1.0) * c + tf.sigmoid(i) * tf.tanh(j)
        h = tf.sigmoid(o) * tf.tanh(c)
        return h, (c, h)


@contextmanager
def control_flow(version: int) -> Iterator[None]:
    """Graphs built inside use control flow v1 or v2; TensorFlow's global setting is put back after."""
    import tensorflow as tf

    tf1 = tf.compat.v1
    was = tf1.control_flow_v2_enabled()
    (tf1.enable_control_flow_v2 if version == 2 else tf1.disable_control_flow_v2)()
    try:
        yield
    finally:
        (tf1.enable_control_flow_v2 if was else tf1.disable_control_flow_v2)()


def build_bidirectional_rnn(folder: Path, *, version: int, seed: int = 21, batch: int = 2) -> ReferenceModel:
    """x [None, 6, 3] -> bidirectional dynamic_rnn (LSTM, 4 units each way) -> `sequence` [batch, 6, 8] (both
    directions' outputs) and `logits` (a dense layer on both final states), under control flow `version`."""
    import numpy as np
    import tensorflow as tf

    from tests.models import _save_checkpoint

    tf1 = tf.compat.v1
    feeds = {"x:0": np.random.default_rng(seed).normal(size=(batch, STEPS, FEATURES)).astype(np.float32)}
    graph = tf.Graph()
    with control_flow(version), graph.as_default():
        x = tf1.placeholder(tf.float32, [None, STEPS, FEATURES], name="x")
        (forward, backward), (state_fw, state_bw) = tf1.nn.bidirectional_dynamic_rnn(
            _LstmCell(tf, "fw"), _LstmCell(tf, "bw"), x, dtype=tf.float32)
        tf.concat([forward, backward], axis=2, name="sequence")
        weights = tf1.get_variable("dense/w", [2 * UNITS, 3], initializer=tf1.glorot_uniform_initializer(seed=8))
        tf.matmul(tf.concat([state_fw[1], state_bw[1]], 1), weights, name="logits")
        with tf1.Session(graph=graph) as session:
            session.run(tf1.global_variables_initializer())
            expected = dict(zip(["sequence:0", "logits:0"], session.run(["sequence:0", "logits:0"], feeds),
                                strict=True))
            prefix = _save_checkpoint(graph, session, folder)
    return ReferenceModel(path=prefix, inputs={"x:0": ("float32", (None, STEPS, FEATURES))},
                          outputs=("sequence:0", "logits:0"), feeds=feeds, expected=expected, batch=batch)
