"""Pruning a GraphDef in place (`ckpt2pb.surgery.prune_to`): the nodes TF's extract_sub_graph keeps, in its order,
with none of them copied (a frozen graph's nodes hold its weights)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from ckpt2pb.surgery import keep_nodes, prune_to


def _graph() -> Any:
    """x -> a -> placed -> out, with a control edge from `guard` to `out`, `placed` colocated with `anchor` (which
    nothing reads), a training side (`loss` on `label`) and a dead end."""
    import tensorflow as tf

    tf1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [2, 3], name="x")
        label = tf1.placeholder(tf.float32, [2, 3], name="label")
        weights = tf.constant(np.arange(6, dtype=np.float32).reshape(2, 3), name="weights")
        a = tf.add(x, weights, name="a")
        tf.reduce_sum(tf.square(a - label), name="loss")
        tf.identity(weights, name="dead_end")
        anchor = tf.constant(1.0, name="anchor")
        with tf1.colocate_with(anchor):
            placed = tf.identity(a, name="placed")
        guard = tf.no_op(name="guard")
        with tf.control_dependencies([guard]):
            tf.identity(placed, name="out")
    return graph.as_graph_def()


def test_it_keeps_what_extract_sub_graph_keeps_in_its_order() -> None:
    import tensorflow as tf

    graph_def = _graph()
    expected = [node.name for node in tf.compat.v1.graph_util.extract_sub_graph(graph_def, ["out"]).node]
    removed = prune_to(graph_def, ["out"])
    assert [node.name for node in graph_def.node] == expected
    # Control inputs and colocation are followed, the training side goes.
    assert {"guard", "anchor"} <= set(expected) and "loss" not in expected
    assert removed == len(_graph().node) - len(expected)


def test_no_node_is_copied() -> None:
    """A node taken before the prune is the one in the graph after it: a copy (extract_sub_graph's) would leave the
    change below behind."""
    graph_def = _graph()
    weights = next(node for node in graph_def.node if node.name == "weights")
    prune_to(graph_def, ["out"])
    weights.attr["marker"].s = b"the same message"
    (kept,) = [node for node in graph_def.node if node.name == "weights"]
    assert kept.attr["marker"].s == b"the same message"


def test_keeping_every_node_changes_nothing_and_a_missing_target_is_refused() -> None:
    graph_def = _graph()
    names = [node.name for node in graph_def.node]
    assert keep_nodes(graph_def, set(names)) == 0 and [node.name for node in graph_def.node] == names
    with pytest.raises(ValueError, match="no node nowhere in the graph"):
        prune_to(graph_def, ["out", "nowhere"])
