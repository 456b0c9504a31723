"""Random draws that cannot change the result, cut out of a graph whose shapes are not static (`--batch -1`),
and draws whose value is seen, which stay."""

from __future__ import annotations

from typing import Any

import numpy as np


def _dropout_graph(*, also_seen: bool) -> tuple[Any, list[str]]:
    """TF 1.x's dropout formula on a batch of unknown size, keep_prob already a constant 1; with `also_seen`,
    the same draw is added (scaled far down) to a second output, so its value reaches an output."""
    import tensorflow as tf

    tf1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        features = tf1.placeholder(tf.float32, [None, 4], name="features")
        draw = tf1.random_uniform(tf.shape(features), name="draw")
        keep_prob = tf.constant(1.0)
        tf.identity(features / keep_prob * tf.floor(keep_prob + draw), name="dropped")
        outputs = ["dropped"]
        if also_seen:
            tf.identity(features + 1e-9 * draw, name="noisy")
            outputs.append("noisy")
    return graph.as_graph_def(), outputs


def _run(graph_def: Any, outputs: list[str], rows: int) -> list[Any]:
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.import_graph_def(graph_def, name="")
    feed = np.arange(rows * 4, dtype=np.float32).reshape(rows, 4)
    with tf.compat.v1.Session(graph=graph) as session:
        return list(session.run([f"{name}:0" for name in outputs], {"features:0": feed}))


def test_a_decided_draw_of_unknown_shape_leaves_no_sampler() -> None:
    import tensorflow as tf

    from ckpt2pb.ranges import fold_decided_draws

    graph_def, outputs = _dropout_graph(also_seen=False)
    assert fold_decided_draws(graph_def, keep=outputs) == 1
    pruned = tf.compat.v1.graph_util.extract_sub_graph(graph_def, outputs)
    ops = {node.op for node in pruned.node}
    assert not {op for op in ops if "Random" in op}
    assert "Fill" in ops
    for rows in (1, 3):  # any batch: dropout with keep_prob 1 is the identity
        (got,) = _run(pruned, outputs, rows)
        np.testing.assert_array_equal(got, np.arange(rows * 4, dtype=np.float32).reshape(rows, 4))


def test_a_draw_an_output_sees_stays() -> None:
    from ckpt2pb.ranges import fold_decided_draws

    graph_def, outputs = _dropout_graph(also_seen=True)
    assert fold_decided_draws(graph_def, keep=outputs) == 0
    assert "RandomUniform" in {node.op for node in graph_def.node}


def test_a_draw_left_as_an_output_itself_stays() -> None:
    from ckpt2pb.ranges import fold_decided_draws

    graph_def, outputs = _dropout_graph(also_seen=False)
    assert fold_decided_draws(graph_def, keep=[*outputs, "draw/RandomUniform"]) == 0
    assert "RandomUniform" in {node.op for node in graph_def.node}


def test_a_stateless_v2_sampler_becomes_a_fill() -> None:
    """TF 2.x's stateless dropout draws with StatelessRandomUniformV2 (shape, key, counter, alg inputs): the fill
    keeps its shape input only."""
    import tensorflow as tf

    from ckpt2pb.ranges import fold_decided_draws

    tf1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        features = tf1.placeholder(tf.float32, [None, 4], name="features")
        key, counter, alg = tf.raw_ops.StatelessRandomGetKeyCounterAlg(seed=tf.constant([1, 2]))
        draw = tf.raw_ops.StatelessRandomUniformV2(shape=tf.shape(features), key=key, counter=counter, alg=alg,
                                                   dtype=tf.float32, name="draw")
        tf.identity(tf.where(draw >= 0.0, features, tf.zeros_like(features)), name="kept")
    graph_def = graph.as_graph_def()
    assert fold_decided_draws(graph_def, keep=["kept"]) == 1
    pruned = tf.compat.v1.graph_util.extract_sub_graph(graph_def, ["kept"])
    assert not {node.op for node in pruned.node if "Random" in node.op}
    fill = next(node for node in pruned.node if node.name == "draw")
    assert fill.op == "Fill" and fill.attr["index_type"].type == tf.int32.as_datatype_enum
    (got,) = _run(pruned, ["kept"], 3)
    np.testing.assert_array_equal(got, np.arange(12, dtype=np.float32).reshape(3, 4))
