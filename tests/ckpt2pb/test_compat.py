"""The ops ATC's TF 1.15 parser would not know, and the checks freeze strips whatever TF version wrote them."""

from __future__ import annotations


def test_every_op_listed_as_newer_than_tf115_is_an_op_of_this_tensorflow() -> None:
    """A misspelt name in the hand-kept list would never match a node."""
    from tensorflow.python.framework import op_def_registry

    from ckpt2pb.compat import NEWER_THAN_TF115

    assert not [op for op in sorted(NEWER_THAN_TF115) if op_def_registry.get(op) is None]


def test_newer_ops_and_functional_ops_are_named() -> None:
    import tensorflow as tf

    from ckpt2pb.compat import unknown_to_tf115

    graph = tf.Graph()
    with graph.as_default():
        values = tf.compat.v1.placeholder(tf.float32, [None, 4], name="values")
        tf.raw_ops.CumulativeLogsumexp(x=values, axis=tf.constant(1), name="running")
        tf.identity(values, name="plain")
    assert unknown_to_tf115(graph.as_graph_def()) == {"running": "CumulativeLogsumexp"}


def test_check_numerics_v2_becomes_an_identity() -> None:
    """TF 2.x's CheckNumericsV2 (tf.debugging.enable_check_numerics writes it) is a check like v1's."""
    import tensorflow as tf

    from ckpt2pb.surgery import strip_checks

    graph = tf.Graph()
    with graph.as_default():
        values = tf.compat.v1.placeholder(tf.float32, [None, 4], name="values")
        tf.raw_ops.CheckNumericsV2(tensor=values, message="inf", name="checked")
    graph_def = graph.as_graph_def()
    strip_checks(graph_def)
    checked = next(node for node in graph_def.node if node.name == "checked")
    assert checked.op == "Identity" and list(checked.input) == ["values"]
