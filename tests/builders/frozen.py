"""Frozen models and their contracts (model.pb + model.json), made without `infer freeze`, for the tests of later
stages: so that convert, dump-bin, run and compare do not depend on every feature of freeze, which has tests of its
own. `write_frozen` writes a graph of tests/builders/graphs.py; `freeze_by_hand` freezes a checkpoint of
tests/models.py with TensorFlow's own freezing."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from binio.binfile import sha256_file
from binio.spec import TensorSpec
from infer.contract import ModelContract, SourceInfo
from tests.builders.graphs import Build
from tests.models import BuiltModel


def write_frozen(folder: Path, build: Build, inputs: tuple[str, ...], outputs: tuple[str, ...]) -> ModelContract:
    """Builds a graph with `build(tf)` (constants only, no variables), writes model.pb and its contract."""
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        build(tf)
    source = SourceInfo(path=str(folder / "model.pb"), kind="pb", tf_version=tf.__version__,
                        frozen_with_tf=tf.__version__)
    return write_pb_and_contract(folder, graph.as_graph_def(), inputs, outputs, source)


def freeze_by_hand(model: BuiltModel, folder: Path, *, batch: int = 2) -> ModelContract:
    """Restores `model`, folds its variables, pins the batch and writes model.pb + model.json into `folder`."""
    import tensorflow as tf

    tf1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default(), tf1.Session(graph=graph) as session:
        saver = tf1.train.import_meta_graph(str(model.prefix) + ".meta", clear_devices=True)
        saver.restore(session, str(model.prefix))
        frozen = tf1.graph_util.convert_variables_to_constants(
            session, graph.as_graph_def(), [name.split(":")[0] for name in model.outputs]
        )
    for node in frozen.node:
        if node.op == "Placeholder":
            dims = node.attr["shape"].shape.dim
            if dims and dims[0].size == -1:
                dims[0].size = batch
    source = SourceInfo(path=str(model.prefix), kind="checkpoint", tf_version="", frozen_with_tf=tf.__version__)
    return write_pb_and_contract(folder, frozen, model.inputs, model.outputs, source)


def write_pb_and_contract(folder: Path, graph_def: Any, inputs: Iterable[str], outputs: Iterable[str],
                          source: SourceInfo) -> ModelContract:
    """Writes `graph_def` as folder/model.pb and its model.json, each tensor's spec read from the graph itself."""
    import tensorflow as tf

    folder.mkdir(parents=True, exist_ok=True)
    pb = folder / "model.pb"
    pb.write_bytes(graph_def.SerializeToString())
    probe = tf.Graph()
    with probe.as_default():
        tf.compat.v1.import_graph_def(graph_def, name="")

    def spec(name: str) -> TensorSpec:
        tensor = probe.get_tensor_by_name(name)
        return TensorSpec(name=name, dtype=tensor.dtype.name, shape=tuple(tensor.shape.as_list()),
                          layout="NHWC" if tensor.shape.rank == 4 else "ND")

    contract = ModelContract(
        path=folder / "model.json", pb="model.pb", pb_sha256=sha256_file(pb), source=source,
        inputs=tuple(spec(name) for name in inputs), outputs=tuple(spec(name) for name in outputs),
    )
    return contract.save()
