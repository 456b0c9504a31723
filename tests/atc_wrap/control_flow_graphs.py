"""Frozen graphs with control flow, the shapes TF 1.x and 2.x write it in, for the stand-in's conversion tests.

Each keeps its control flow live: the condition or the trip count is a model input (or computed from one), so
tf2onnx makes an ONNX If or Loop whose bodies read tensors and weights of the graph around them by name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

_RNG_SEED = 38


def _weights(*shape: int, seed: int, scale: float = 0.3) -> np.ndarray:
    return (np.random.default_rng((_RNG_SEED, seed)).standard_normal(shape) * scale).astype(np.float32)


@contextmanager
def control_flow_v1(tf: Any) -> Iterator[None]:
    """Switch/Merge and Enter/Exit/NextIteration, as TF 1.x graphs (and Estimators' checkpoints) hold them."""
    tf.compat.v1.disable_control_flow_v2()
    try:
        yield
    finally:
        tf.compat.v1.enable_control_flow_v2()


def build_cond_dropout(tf: Any) -> None:
    """x (2,8,8,3), is_training () bool -> out (2,4): conv, relu, then a dropout steered by is_training (a model
    input, as `freeze --inputs x:0,is_training:0` keeps it); the inference branch scales by a weight it alone reads."""
    tf1 = tf.compat.v1
    with control_flow_v1(tf):
        x = tf1.placeholder(tf.float32, [2, 8, 8, 3], name="x")
        is_training = tf1.placeholder(tf.bool, [], name="is_training")
        kernel = tf.constant(_weights(3, 3, 3, 4, seed=1), name="conv/kernel")
        hidden = tf.nn.relu(tf.nn.conv2d(x, kernel, 1, "SAME"), name="relu")
        scale = tf.constant(_weights(4, seed=2) + 1.0, name="inference/scale")
        hidden = tf.cond(is_training, lambda: tf.nn.dropout(hidden, rate=0.5), lambda: hidden * scale,
                         name="dropout")
        tf.identity(tf.reduce_mean(hidden, axis=[1, 2]), name="out")


def build_while_rnn(tf: Any) -> None:
    """x (2,6,5) -> out (2,4): a recurrence h = tanh(x_t W + h U) over the time steps by tf.while_loop, its body
    reading the projection weights of the graph around it; the steps come from the input's shape at run time."""
    tf1 = tf.compat.v1
    with control_flow_v1(tf):
        x = tf1.placeholder(tf.float32, [2, 6, 5], name="x")
        w = tf.constant(_weights(5, 4, seed=3), name="rnn/w")
        u = tf.constant(_weights(4, 4, seed=4), name="rnn/u")
        steps = tf.shape(x)[1]

        def body(t: Any, h: Any) -> tuple[Any, Any]:
            x_t = tf.gather(x, t, axis=1)
            return t + 1, tf.tanh(tf.matmul(x_t, w) + tf.matmul(h, u))

        _, state = tf.while_loop(lambda t, h: t < steps, body, (tf.constant(0), tf.zeros([2, 4])), name="rnn")
        tf.reshape(state, [2, 4], name="out")  # a static shape past the loop, once the graph is read back


def build_nested_control_flow(tf: Any) -> None:
    """x (2,5), gate () float -> out (2,5): a while loop whose body holds a cond on the step that reads the loop's
    own state, the outer activation and a weight of the outer graph (an If inside a Loop's body)."""
    tf1 = tf.compat.v1
    with control_flow_v1(tf):
        x = tf1.placeholder(tf.float32, [2, 5], name="x")
        gate = tf1.placeholder(tf.float32, [], name="gate")
        hidden = tf.nn.relu(tf.matmul(x, tf.constant(_weights(5, 5, seed=5))), name="hidden")
        mix = tf.constant(_weights(5, 5, seed=6), name="mix")

        def body(t: Any, h: Any) -> tuple[Any, Any]:
            odd = tf.equal(tf.math.floormod(t, 2), 1)
            step = tf.cond(odd, lambda: tf.matmul(h, mix) + hidden, lambda: h * gate - hidden)
            return t + 1, tf.tanh(step)

        _, state = tf.while_loop(lambda t, h: t < 3, body, (tf.constant(0), hidden), name="loop")
        tf.reshape(state, [2, 5], name="out")


def build_cond_v2(tf: Any) -> None:
    """x (2,4), flag () bool -> out (2,4): TF 2's functional cond (an If op calling two functions of the graph's
    library), a branch reading a weight."""
    x = tf.compat.v1.placeholder(tf.float32, [2, 4], name="x")
    flag = tf.compat.v1.placeholder(tf.bool, [], name="flag")
    w = tf.constant(_weights(4, 4, seed=7), name="w")
    hidden = tf.nn.relu(x * 2.0, name="hidden")
    chosen = tf.cond(flag, lambda: tf.matmul(hidden, w), lambda: hidden - 1.0, name="choice")
    tf.identity(chosen, name="out")


CONTROL_FLOW_GRAPHS: dict[str, tuple[Callable[[Any], None], tuple[str, ...], tuple[str, ...]]] = {
    "cond_dropout": (build_cond_dropout, ("x:0", "is_training:0"), ("out:0",)),
    "while_rnn": (build_while_rnn, ("x:0",), ("out:0",)),
    "nested_control_flow": (build_nested_control_flow, ("x:0", "gate:0"), ("out:0",)),
    "cond_v2": (build_cond_v2, ("x:0", "flag:0"), ("out:0",)),
}
"""name -> (builder, inputs, outputs): what `tests.builders.frozen.write_frozen` takes."""


def feeds(name: str, contract: Any, *, seed: int = 0) -> dict[str, np.ndarray]:
    """One batch for each input of a control-flow graph: normal floats, the flags False (inference) or as asked."""
    rng = np.random.default_rng(seed)
    found: dict[str, np.ndarray] = {}
    for spec in contract.inputs:
        if spec.dtype == "bool":
            found[spec.name] = np.asarray(False)
        elif spec.shape == ():
            found[spec.name] = np.asarray(0.5, np.float32)
        else:
            found[spec.name] = rng.standard_normal(spec.shape).astype(np.float32)
    return found
