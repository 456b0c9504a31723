"""A model file must not be able to act: every op family of ckpt2pb/host_ops.json, each in a graph written here, is
classified; a graph holding one is refused by node and op before it runs, wherever infer would run it (freeze's
verification, run --backend tf, convert), from a meta graph, a pb and a SavedModel alike, unless --allow-host-ops;
inspect lists them and imports the graph without running them."""

from __future__ import annotations

import dataclasses
import fnmatch
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ckpt2pb.host_ops import (
    ALLOW_FLAG,
    TABLE,
    UNLISTED,
    HostOpError,
    families,
    family_of,
    find_host_ops,
    make_inert,
)
from tests.cli import run_cli

SECRET = "the-secret-is-27-bytes-long"


def _registered() -> dict[str, Any]:
    from tensorflow.core.framework import op_def_pb2
    from tensorflow.python.client import pywrap_tf_session as c_api  # the only way to list every registered op

    ops = op_def_pb2.OpList.FromString(bytes(c_api.TF_GetBuffer(c_api.TF_GetAllOpList())))  # memory, not a file
    return {op.name: op for op in ops.op}


# --- the table ----------------------------------------------------------------------------------------------------

def test_every_stateful_op_of_this_tensorflow_is_in_a_row() -> None:
    from tensorflow.core.framework import node_def_pb2

    unlisted = [name for name, op in _registered().items()
                if op.is_stateful and family_of(node_def_pb2.NodeDef(name="n", op=name)) is UNLISTED]
    assert unlisted == []


def test_every_name_in_the_table_is_an_op_this_tensorflow_has() -> None:
    registered = _registered()
    for family in families():
        assert family.why.strip(), family.name
        for pattern in family.patterns:
            assert fnmatch.filter(registered, pattern), (family.name, pattern)


def test_the_refusals_name_the_flag_every_stage_declares() -> None:
    from infer._option_fields import setting_of
    from infer.compare.options import CompareOptions
    from infer.convert.options import ConvertOptions
    from infer.freeze.options import FreezeOptions
    from infer.run.options import RunOptions
    from infer.tune.options import TuneOptions

    for cls in (FreezeOptions, ConvertOptions, RunOptions, CompareOptions, TuneOptions):
        field = next(f for f in dataclasses.fields(cls) if f.name == "allow_host_ops")
        assert setting_of(field).flag == ALLOW_FLAG, cls
        assert field.default is False


def test_the_table_is_documented_row_by_row() -> None:
    page = (Path(__file__).parents[2] / "docs" / "host-ops.md").read_text()
    for row in json.loads(TABLE.read_text())["families"]:
        assert row["family"] in page and row["why"][:60] in page, row["family"]


# --- each family, in a graph written here ---------------------------------------------------------------------------

def _graph(build: Callable[[Any, Any], None]) -> Any:
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, 4], name="x")
        build(tf, x)
    return graph.as_graph_def()


def _write_to(folder: Path) -> Callable[[Any, Any], None]:
    return lambda tf, x: tf.io.write_file(str(folder / "written.txt"), "owned", name="writer")


def _raw(op: str, **attrs: Any) -> Callable[[Any, Any], None]:
    return lambda tf, x: getattr(tf.raw_ops, op)(name="node", **attrs)


# op family -> a graph holding one op of it, built with TensorFlow's own API, and the op's node name
FAMILIES: dict[str, tuple[Callable[[Path], Callable[[Any, Any], None]], str]] = {
    "file reads": (lambda d: lambda tf, x: tf.io.read_file(str(d / "secret"), name="node"), "node"),
    "file writes": (_write_to, "writer"),
    "checkpoint save and restore": (
        lambda d: lambda tf, x: tf.raw_ops.RestoreV2(prefix=str(d / "other.ckpt"), tensor_names=["v"],
                                                     shape_and_slices=[""], dtypes=[tf.float32], name="node"),
        "node"),
    "file readers and record queues": (lambda d: _raw("WholeFileReaderV2"), "node"),
    "tf.data file sources and sinks": (
        lambda d: lambda tf, x: tf.raw_ops.TextLineDataset(filenames=[str(d / "secret")], compression_type="",
                                                           buffer_size=0, name="node"), "node"),
    "Python callbacks": (lambda d: lambda tf, x: tf.numpy_function(lambda a: a, [x], tf.float32, name="node"),
                         "node"),
    "summary writers": (lambda d: lambda tf, x: tf.raw_ops.SummaryWriter(shared_name="w", name="node"), "node"),
    "debug ops": (lambda d: lambda tf, x: tf.raw_ops.DebugIdentity(input=x, debug_urls=[f"file://{d}/dump"],
                                                                   name="node"), "node"),
    "printing to a file": (lambda d: lambda tf, x: tf.print(x, output_stream=f"file://{d}/printed", name="node"),
                           "node"),
    "protobuf descriptors from a file": (
        lambda d: lambda tf, x: tf.raw_ops.DecodeProtoV2(bytes=[""], message_type="m", field_names=[],
                                                         output_types=[], descriptor_source=str(d / "d.desc"),
                                                         name="node"), "node"),
    "network and other machines": (
        lambda d: lambda tf, x: tf.raw_ops.CollectiveReduceV2(input=x, group_size=2, group_key=1, instance_key=1,
                                                              ordering_token=[], merge_op="Add", final_op="Id",
                                                              name="node"), "node"),
    "TPU and XLA host programs": (lambda d: _raw("ConfigureDistributedTPU"), "node"),
    "process control": (lambda d: _raw("Abort", error_msg="bye"), "node"),
    "queues, barriers and staging areas": (
        lambda d: lambda tf, x: tf.queue.FIFOQueue(2, [tf.float32], name="node").dequeue(), "node"),
}


def test_every_acting_family_has_a_graph_here() -> None:
    acting = {family.name for family in families() if family.acts} - {"test ops"}
    assert acting == set(FAMILIES)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_each_family_is_found_and_refused_by_node_and_op(name: str, tmp_path: Path) -> None:
    from ckpt2pb.host_ops import refuse_host_ops

    build, node = FAMILIES[name]
    graph_def = _graph(build(tmp_path))
    found = [op for op in find_host_ops(graph_def) if op.node == node]
    assert [op.family for op in found] == [name]
    with pytest.raises(HostOpError) as refused:
        refuse_host_ops(found, "g.pb", allow=False)
    assert refused.value.message.startswith(f"g.pb: the graph holds ops that act on this machine when it runs "
                                            f"(node '{node}' ({found[0].op}): {name})")
    assert ALLOW_FLAG in (refused.value.hint or "")
    refuse_host_ops(found, "g.pb", allow=True)  # the user's explicit choice


def test_harmless_spellings_of_acting_ops_are_not_listed(tmp_path: Path) -> None:
    def build(tf: Any, x: Any) -> None:
        tf.print(x, output_stream=sys.stderr, name="console")
        tf.raw_ops.Copy(input=x, name="plain_copy")
        tf.io.decode_proto([""], "google.protobuf.Empty", [], [], name="local")
        tf.compat.v1.get_variable("v", [4])
        tf.random.uniform([2], name="draw")
        tf.debugging.assert_all_finite(x, "finite")

    assert find_host_ops(_graph(build)) == ()


def test_an_op_inside_a_graph_function_counts_and_names_its_function(tmp_path: Path) -> None:
    import tensorflow as tf

    @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32)])
    def scaled(x: Any) -> Any:
        tf.io.write_file(str(tmp_path / "from_function.txt"), "owned", name="inner_write")
        return x * 2

    found = find_host_ops(_graph(lambda tf, x: tf.identity(scaled(x), name="y")))
    assert [(op.node, op.op, op.family) for op in found] == [("inner_write", "WriteFile", "file writes")]
    assert found[0].function.startswith("__inference_scaled")
    assert " of function '__inference_scaled" in found[0].where()


def test_only_what_a_run_reaches_counts_when_the_run_is_known(tmp_path: Path) -> None:
    def build(tf: Any, x: Any) -> None:
        tf.io.write_file(str(tmp_path / "training_only.txt"), "x", name="unreached")
        line = tf.io.read_file(str(tmp_path / "secret"), name="reached")
        tf.identity(x * tf.cast(tf.strings.length(line), tf.float32), name="y")
        tf.identity(x, name="clean")

    graph_def = _graph(build)
    assert [op.node for op in find_host_ops(graph_def, roots=["y:0"])] == ["reached"]
    assert find_host_ops(graph_def, roots=["clean:0"]) == ()
    assert find_host_ops(graph_def, roots=["y:0"], fed=["reached:0"]) == ()  # a fed tensor's node never runs


# --- end to end: a meta graph, a pb and a SavedModel -----------------------------------------------------------------

def _secret(tmp_path: Path) -> Path:
    secret = tmp_path / "elsewhere" / "secret"
    secret.parent.mkdir()
    secret.write_text(SECRET)
    return secret


def _leaking_graph(tf: Any, secret: Path, written: Path) -> Any:
    """x -> x @ w + len(secret), run after writing `written`: a checkpoint a model zoo could ship."""
    tf1 = tf.compat.v1
    x = tf1.placeholder(tf.float32, [None, 4], name="x")
    w = tf1.get_variable("w", [4, 3], initializer=tf1.zeros_initializer())
    leak = tf.cast(tf.strings.length(tf.io.read_file(str(secret))), tf.float32)
    with tf.control_dependencies([tf.io.write_file(str(written), "owned")]):
        return tf.identity(tf.matmul(x, w) + leak, name="leak")


def _checkpoint(folder: Path, secret: Path, written: Path) -> Path:
    import tensorflow as tf

    tf1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        _leaking_graph(tf, secret, written)
        saver = tf1.train.Saver()
        with tf1.Session(graph=graph) as session:
            session.run(tf1.global_variables_initializer())
            folder.mkdir(parents=True)
            saver.save(session, str(folder / "model.ckpt"))
    written.unlink(missing_ok=True)  # nothing of the build counts
    return folder / "model.ckpt"


def test_a_meta_graph_that_writes_outside_the_output_folder_is_refused(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    written = tmp_path / "elsewhere" / "written.txt"
    prefix = _checkpoint(tmp_path / "ckpt", _secret(tmp_path), written)
    result = run_cli(capsys, "freeze", prefix, "--outputs", "leak:0", "--batch", "1", "-o", tmp_path / "out")
    assert result.code == 2
    assert result.error_line.startswith(f"error: {prefix}: the graph holds ops that act on this machine when it runs "
                                        "(node 'ReadFile' (ReadFile): file reads; node 'WriteFile' (WriteFile): "
                                        "file writes)")
    assert not written.exists() and not (tmp_path / "out").exists()
    # allowed, the same graph does write: the refusal above is what kept it from it
    allowed = run_cli(capsys, "freeze", prefix, "--outputs", "leak:0", "--batch", "1", "-o", tmp_path / "out",
                      ALLOW_FLAG)
    assert allowed.code == 0, allowed.err
    assert written.read_text() == "owned"


def test_a_pb_that_reads_a_secret_is_refused_by_run_and_convert(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    import numpy as np
    import tensorflow as tf

    from binio.binfile import read_bin
    from infer.contract import SourceInfo
    from tests.builders.bins import write_dataset
    from tests.builders.frozen import write_pb_and_contract

    secret = _secret(tmp_path)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [1, 4], name="x")
        tf.identity(x * 0 + tf.cast(tf.strings.length(tf.io.read_file(str(secret))), tf.float32), name="leak")
    contract = write_pb_and_contract(tmp_path / "model", graph.as_graph_def(), ["x:0"], ["leak:0"],
                                     SourceInfo(path="zoo", kind="pb", tf_version="", frozen_with_tf=""))
    write_dataset(tmp_path / "bins", {"x:0": [np.ones((1, 4), np.float32)]}, samples=1, layout="ND")
    for args in (("run", contract.path, "--input", tmp_path / "bins", "-o", tmp_path / "out", "-b", "tf"),
                 ("convert", contract.path, "--target", "onnx")):
        result = run_cli(capsys, *args)
        assert (result.code, result.error_line) == (2, f"error: {contract.pb_path}: the graph holds ops that act on "
                                                       "this machine when it runs (node 'ReadFile' (ReadFile): file "
                                                       "reads); infer runs no such graph"), args
        assert SECRET not in result.out + result.err
    assert not (tmp_path / "out").exists()
    allowed = run_cli(capsys, "run", contract.path, "--input", tmp_path / "bins", "-o", tmp_path / "out", "-b", "tf",
                      ALLOW_FLAG)
    assert allowed.code == 0, allowed.err
    [leaked] = (tmp_path / "out").glob("*/*_output_0.bin")
    assert read_bin(leaked, contract.outputs[0]).ravel().tolist() == [len(SECRET)] * 4  # what it would have leaked


def test_a_saved_model_whose_graph_calls_python_or_writes_is_refused(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    import tensorflow as tf

    tf1 = tf.compat.v1
    written = tmp_path / "elsewhere" / "written.txt"
    written.parent.mkdir()
    graph = tf.Graph()
    with graph.as_default(), tf1.Session(graph=graph) as session:
        x = tf1.placeholder(tf.float32, [None, 4], name="x")
        called = tf.numpy_function(lambda a: a, [x], tf.float32, name="callback")
        with tf.control_dependencies([tf.io.write_file(str(written), "owned", name="writer")]):
            y = tf.identity(called, name="y")
        builder = tf1.saved_model.Builder(str(tmp_path / "saved"))
        signature = tf1.saved_model.predict_signature_def({"x": x}, {"y": y})
        builder.add_meta_graph_and_variables(session, ["serve"], signature_def_map={"serving_default": signature})
        builder.save()
    result = run_cli(capsys, "freeze", tmp_path / "saved", "--outputs", "y", "--batch", "1", "-o", tmp_path / "out")
    assert result.code == 2
    assert result.error_line == (f"error: {tmp_path / 'saved'}: the graph holds ops that act on this machine when it "
                                 "runs (node 'callback' (PyFunc): Python callbacks; node 'writer' (WriteFile): file "
                                 "writes); infer runs no such graph")
    assert not written.exists()
    listed = run_cli(capsys, "inspect", tmp_path / "saved", "--json")
    assert {(op["node"], op["family"]) for op in json.loads(listed.out)["host_ops"]} == {
        ("callback", "Python callbacks"), ("writer", "file writes")}


def test_a_tf2_saved_model_whose_functions_write_is_not_revived_by_inspect(tmp_path: Path,
                                                                            capsys: pytest.CaptureFixture[str]) -> None:
    import tensorflow as tf

    written = tmp_path / "elsewhere" / "written.txt"
    written.parent.mkdir()

    class Model(tf.Module):
        def __init__(self) -> None:
            self.w = tf.Variable(tf.ones([4, 2]))

        @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32)])
        def serve(self, x: Any) -> Any:
            tf.io.write_file(str(written), "owned")
            return {"y": tf.matmul(x, self.w)}

    model = Model()
    tf.saved_model.save(model, str(tmp_path / "saved"), signatures={"serving_default": model.serve})
    written.unlink(missing_ok=True)
    listed = run_cli(capsys, "inspect", tmp_path / "saved")
    assert listed.code == 0, listed.err
    assert "WriteFile" in listed.out and "not revived" in listed.out
    result = run_cli(capsys, "freeze", tmp_path / "saved", "--outputs", "y", "--batch", "1", "-o", tmp_path / "out")
    assert result.code == 2 and "(WriteFile) of function '__inference_serve" in result.error_line
    assert not written.exists()


def test_a_saver_whose_restore_writes_is_not_the_checkpoints_own(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """restore_op_name is the graph's to say: one that names a WriteFile is refused, not trusted as the saver."""
    from tensorflow.core.protobuf import meta_graph_pb2

    from ckpt2pb.protobuf import parse_protobuf

    written = tmp_path / "elsewhere" / "written.txt"
    prefix = _checkpoint(tmp_path / "ckpt", _secret(tmp_path), written)
    meta = parse_protobuf(meta_graph_pb2.MetaGraphDef(), Path(f"{prefix}.meta"), "meta graph")
    meta.saver_def.restore_op_name = "WriteFile"
    Path(f"{prefix}.meta").write_bytes(meta.SerializeToString())
    result = run_cli(capsys, "freeze", prefix, "--outputs", "MatMul:0", "--batch", "1", "-o", tmp_path / "out")
    assert result.code == 2 and "node 'WriteFile' (WriteFile): file writes" in result.error_line
    assert not written.exists()


def test_the_checkpoints_own_saver_is_listed_as_such_and_never_refused(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    from tests.models import build_small_cnn

    built = build_small_cnn(tmp_path / "ckpt")
    listed = json.loads(run_cli(capsys, "inspect", built.prefix, "--json").out)["host_ops"]
    assert {(op["node"], op["saver"]) for op in listed} == {("save/SaveV2", True), ("save/RestoreV2", True)}


# --- importing runs nothing ------------------------------------------------------------------------------------------

def test_inspect_imports_a_graph_whose_shape_reads_a_fifo_without_reading_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """TensorFlow evaluates ReadFile while importing, to infer the Reshape's shape: from a FIFO that waits forever.
    A writer that closes at once turns the old hang into an empty read, so the test fails instead of hanging."""
    import tensorflow as tf

    fifo = tmp_path / "fifo"
    fifo.write_text("hello")  # a regular file while the graph is built (tf.function infers the shape too)

    @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32)])
    def reshaped(x: Any) -> Any:
        return tf.reshape(x, tf.stack([-1, tf.strings.length(tf.io.read_file(str(fifo)))]))

    def build(tf: Any, x: Any) -> None:
        tf.identity(reshaped(x), name="in_function")
        tf.reshape(x, tf.stack([-1, tf.strings.length(tf.io.read_file(str(fifo), name="outside"))]), name="in_graph")

    pb = tmp_path / "g.pb"
    pb.write_bytes(_graph(build).SerializeToString())
    fifo.unlink()
    os.mkfifo(fifo)
    opened = threading.Event()

    def writer() -> None:
        fd = os.open(fifo, os.O_WRONLY)  # blocks until the import opens it, if it does
        opened.set()
        os.close(fd)

    threading.Thread(target=writer, daemon=True).start()
    result = run_cli(capsys, "inspect", pb, "--json")
    assert result.code == 0, result.err
    assert not opened.is_set()
    assert {op["node"] for op in json.loads(result.out)["host_ops"]} == {"outside", "ReadFile"}
    os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))  # lets the writer go


def test_make_inert_keeps_what_a_run_computes(tmp_path: Path) -> None:
    """A barrier forwards its input: a graph run with --allow-host-ops still computes what it did."""
    import tensorflow as tf

    (tmp_path / "secret").write_text(SECRET)
    graph_def = _graph(lambda tf, x: tf.strings.length(tf.io.read_file(str(tmp_path / "secret")), name="n"))
    make_inert(graph_def)
    assert any(node.op == "GuaranteeConst" for node in graph_def.node)
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.import_graph_def(graph_def, name="")
        with tf.compat.v1.Session() as session:
            assert session.run("n:0") == len(SECRET)


# --- what TensorFlow would crash on ---------------------------------------------------------------------------------

def _self_calling(path: Path, call_op: str) -> Path:
    from tensorflow.core.framework import graph_pb2

    graph_def = graph_pb2.GraphDef()
    function = graph_def.library.function.add()
    function.signature.name = "selfcall"
    function.signature.input_arg.add(name="x", type=1)
    function.signature.output_arg.add(name="y", type=1)
    inner = function.node_def.add(name="again", op=call_op if call_op != "direct" else "selfcall", input=["x"])
    outer = graph_def.node.add(name="call", op=inner.op, input=["x"])
    graph_def.node.add(name="x", op="Placeholder").attr["dtype"].type = 1
    for node in (inner, outer):
        if call_op != "direct":
            node.attr["f"].func.name = "selfcall"
            node.attr["Tin"].list.type.append(1)
            node.attr["Tout"].list.type.append(1)
    function.ret["y"] = "again:output:0" if call_op != "direct" else "again:y:0"
    path.write_bytes(graph_def.SerializeToString())
    return path


@pytest.mark.slow
@pytest.mark.parametrize("call_op", ["direct", "PartitionedCall", "StatefulPartitionedCall"])
@pytest.mark.parametrize("command", ["inspect", "freeze"])
def test_a_self_calling_function_is_refused_not_a_segfault(tmp_path: Path, call_op: str, command: str) -> None:
    """In a child process: TensorFlow's import died of signal 11 on it."""
    pb = _self_calling(tmp_path / "g.pb", call_op)
    extra = ["--outputs", "call", "-o", str(tmp_path / "out")] if command == "freeze" else []
    done = subprocess.run([sys.executable, "-m", "infer", command, str(pb), *extra], capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    assert f"error: {pb}: graph function 'selfcall' calls itself ('selfcall' -> 'selfcall')" in done.stderr


# --- Keras files: a Lambda layer is Python code ----------------------------------------------------------------------

def _keras_with_lambda(path: Path, ran: Path) -> Path:
    """A model whose Lambda layer writes `ran` when Keras builds it: what a model zoo's author could put there."""
    body = f"lambda t: t * 2 + (open({str(ran)!r}, 'w').write('ran') and 0)"
    import keras  # Keras 3, TensorFlow's own: it writes both the .keras zip and the legacy HDF5 (.h5)
    inputs = keras.Input((4,), name="x")
    keras.Model(inputs, keras.layers.Dense(3, name="probs")(keras.layers.Lambda(eval(body), name="code")(inputs))
                ).save(path)
    ran.unlink(missing_ok=True)  # building it ran the code once; nothing of the build counts
    return path


@pytest.mark.parametrize("suffix", [".keras", ".h5"])
def test_a_keras_lambda_layer_is_refused_by_name_and_never_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                 suffix: str) -> None:
    ran = tmp_path / "elsewhere" / "ran"
    ran.parent.mkdir()
    model = _keras_with_lambda(tmp_path / f"lam{suffix}", ran)
    said = (f"error: {model}: Lambda layer 'code' is Python code that would run while Keras builds the model; infer "
            "loads Keras files in safe mode, which runs none")
    for args in (("inspect", model), ("freeze", model, "--outputs", "probs", "--batch", "1", "-o", tmp_path / "out")):
        outcome = run_cli(capsys, *args)
        assert (outcome.code, outcome.error_line) == (2, said), outcome.err
        assert f"pass {ALLOW_FLAG} (freeze)" in outcome.err and "Traceback" not in outcome.err
    assert not ran.exists() and not (tmp_path / "out").exists()
    # allowed, Keras loads it with safe mode off and the layer's code does run: the refusal is what kept it from it
    allowed = run_cli(capsys, "freeze", model, "--outputs", "probs", "--batch", "1", "-o", tmp_path / "out",
                      ALLOW_FLAG)
    assert allowed.code == 0, allowed.err
    assert ran.read_text() == "ran"
