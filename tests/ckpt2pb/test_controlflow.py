"""Inlining function calls (`ckpt2pb.controlflow.fold_constant_conds`) on a graph of many of them: every call goes,
the readers of each call (data and control edges, a call fed by a call) read its body, and the graph computes
what the calls computed."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from ckpt2pb.controlflow import fold_constant_conds

CALLS = 600  # chained calls: thousands of nodes once inlined


def _chain() -> Any:
    import tensorflow as tf

    @tf.function
    def step(x: Any) -> Any:
        return x * 0.5 + 1.0

    @tf.function
    def chain(x: Any) -> Any:
        for _ in range(CALLS - 1):
            x = step(x)
        with tf.control_dependencies([step(x)]):  # a control edge on a call
            marked = tf.identity(x, name="marked")
        return tf.identity(step(marked), name="out")

    return chain.get_concrete_function(tf.TensorSpec([3], tf.float32, name="x")).graph.as_graph_def()


def _run(graph_def: Any, output: str, x: np.ndarray) -> np.ndarray:
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.import_graph_def(graph_def, name="")
    with tf.compat.v1.Session(graph=graph) as session:
        return np.asarray(session.run(output, {"x:0": x}))


@pytest.mark.slow
def test_every_call_of_a_long_chain_is_inlined_and_computes_the_same() -> None:
    graph_def = _chain()
    calls = [n.name for n in graph_def.node if n.op == "PartitionedCall"]
    assert len(calls) == CALLS + 1
    x = np.array([0.0, 4.0, -8.0], np.float32)
    expected = x.copy()
    for _ in range(CALLS):  # the chain's CALLS - 1 steps, then the one after the marked identity
        expected = expected * np.float32(0.5) + np.float32(1.0)
    np.testing.assert_allclose(_run(graph_def, "out:0", x), expected, rtol=1e-6)
    kept = calls[-1]  # the call the output reads: named by the user, so it stays (an Identity of its body)
    assert fold_constant_conds(graph_def, keep={kept}) == 0  # no If folded: only calls
    ops = {n.name: n.op for n in graph_def.node}
    assert "PartitionedCall" not in ops.values() and ops[kept] == "Identity"
    assert sum(op == "Mul" for op in ops.values()) == CALLS + 1
    marked = next(n for n in graph_def.node if n.name == "marked")
    controls = [ref for ref in marked.input if ref.startswith("^")]
    # It waits for the inlined step's result, a node of that call's body now.
    assert len(controls) == 1 and controls[0].startswith(f"^{calls[-2]}/call/") and controls[0][1:] in ops
    assert all(ref.lstrip("^").split(":")[0] in ops for n in graph_def.node for ref in n.input)
    np.testing.assert_allclose(_run(graph_def, "out:0", x), expected, rtol=1e-6)
    np.testing.assert_allclose(_run(graph_def, f"{kept}:0", x), expected, rtol=1e-6)
