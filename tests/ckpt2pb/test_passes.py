"""Freeze's passes, each alone on a small graph of its own, and their order (`ckpt2pb.passes`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from binio.spec import TensorSpec
from ckpt2pb.passes import CLEANUPS, EDITS, Plan, run_passes
from tests.builders.graphs import graph_of

tf = pytest.importorskip("tensorflow")
tf1 = tf.compat.v1


def _plan(outputs: tuple[str, ...], **given: Any) -> Plan:
    return Plan(inputs=given.get("inputs", ()), replaced=given.get("replaced", {}), sets=given.get("sets", {}),
                set_texts={}, output_nodes=outputs)


def _ops(graph_def: Any) -> dict[str, str]:
    return {node.name: node.op for node in graph_def.node}


def _one(name: str) -> Any:
    return next(step for step in (*EDITS, *CLEANUPS) if step.name == name)


def test_the_passes_run_in_their_documented_order() -> None:
    assert [step.name for step in EDITS] == [
        "pin-inputs", "fold-assignments", "fold-defaults", "prune", "fold-conds", "prune", "fold-draws",
        "strip-checks", "prune", "drop-unused-functions"]
    assert [step.name for step in CLEANUPS] == ["clear-devices", "strip-stale-colocation", "strip-default-attrs"]


def test_pin_inputs_gives_a_placeholder_its_shape_and_stands_one_in_for_another_tensor() -> None:
    def build(tf: Any) -> None:
        x = tf1.placeholder(tf.float32, (None, 3), name="x")
        feature = tf.identity(x * 2.0, name="feature")
        tf.identity(feature + 1.0, name="out")

    graph_def = graph_of(build)
    plan = _plan(("out",), inputs=(TensorSpec("x:0", "float32", (4, 3)), TensorSpec("feature:0", "float32", (4, 3))),
                 replaced={"feature:0": "feature__input_0"})
    assert _one("pin-inputs")(graph_def, plan) == 2
    nodes = {node.name: node for node in graph_def.node}
    assert [d.size for d in nodes["x"].attr["shape"].shape.dim] == [4, 3]
    assert nodes["feature__input_0"].op == "Placeholder"
    assert "feature__input_0" in [i.split(":")[0] for i in nodes["add"].input]


def test_fold_assignments_and_defaults_leave_no_placeholder_behind() -> None:
    def build(tf: Any) -> None:
        training = tf1.placeholder_with_default(True, (), name="is_training")
        keep = tf1.placeholder(tf.float32, (), name="keep_prob")
        tf.identity(tf.cast(training, tf.float32) * keep, name="out")

    graph_def = graph_of(build)
    plan = _plan(("out",), sets={"keep_prob": np.float32(0.5)})
    assert _one("fold-assignments")(graph_def, plan) == 1
    assert _one("fold-defaults")(graph_def, plan) == 1
    assert _ops(graph_def)["keep_prob"] == "Const" and _ops(graph_def)["is_training"] == "Identity"


def test_prune_keeps_what_the_outputs_read() -> None:
    def build(tf: Any) -> None:
        x = tf1.placeholder(tf.float32, (2,), name="x")
        tf.identity(x, name="out")
        tf.identity(x * 3.0, name="loss")

    graph_def = graph_of(build)
    removed = _one("prune")(graph_def, _plan(("out",)))
    assert removed == 3 and set(_ops(graph_def)) == {"x", "out"}  # loss, mul and its constant went


def test_strip_checks_takes_asserts_out_of_the_data_path() -> None:
    def build(tf: Any) -> None:
        x = tf1.placeholder(tf.float32, (2,), name="x")
        checked = tf1.debugging.check_numerics(x, "x has NaN", name="checked")
        guard = tf1.Assert(tf.reduce_all(x > 0), [x], name="positive")
        with tf.control_dependencies([guard]):
            tf.identity(checked, name="out")

    graph_def = graph_of(build)
    assert _one("strip-checks")(graph_def, _plan(("out",))) >= 1  # the Assert and its plumbing
    ops = _ops(graph_def)
    assert "Assert" not in ops.values() and ops["checked"] == "Identity"


def test_drop_unused_functions_removes_what_nothing_calls() -> None:
    graph_def = graph_of(lambda tf: tf.identity(tf1.placeholder(tf.float32, (), name="x"), name="out"))
    graph_def.library.function.add().signature.name = "nobody_calls_me"
    assert _one("drop-unused-functions")(graph_def, _plan(("out",))) == 1
    assert len(graph_def.library.function) == 0


def test_cleanups_strip_devices_and_default_attrs() -> None:
    graph_def = graph_of(lambda tf: tf.identity(tf1.placeholder(tf.float32, (), name="x"), name="out"))
    graph_def.node[0].device = "/job:worker/device:GPU:3"
    changed = run_passes(graph_def, _plan(("out",)), CLEANUPS)
    assert set(changed) == {"clear-devices", "strip-stale-colocation", "strip-default-attrs"}
    assert all(node.device == "" for node in graph_def.node)


def test_run_passes_sums_a_pass_that_runs_twice() -> None:
    def build(tf: Any) -> None:
        x = tf1.placeholder(tf.float32, (2,), name="x")
        tf.identity(x, name="out")
        tf.identity(x, name="unread")

    graph_def = graph_of(build)
    changed = run_passes(graph_def, _plan(("out",)), EDITS)
    assert changed["prune"] == 1 and set(_ops(graph_def)) == {"x", "out"}
