"""A bidirectional dynamic_rnn, frozen from its checkpoint and converted to the stand-in in every precision mode,
under control flow v1 (Enter/Exit over TensorArrayV3) and v2 (While over TensorList ops: what TF 2.x writes by
default, on which tf2onnx 1.17 wrote a model ONNX Runtime could not load, "Invalid tensor data type 0")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from atc_wrap.precision.modes import PRECISION_MODES, PrecisionMode
from ckpt2pb.protobuf import read_graph_def
from infer.contract import ModelContract
from infer.convert._convert import ConvertOptions, convert_model
from infer.freeze import FreezeOptions, freeze_model
from tests.atc_wrap.outputs import cosine, onnx_outputs, tf_outputs
from tests.models import ReferenceModel
from tests.recurrent_models import build_bidirectional_rnn

pytestmark = pytest.mark.slow

LOOP_OPS = {1: {"Enter", "Exit", "TensorArrayV3"}, 2: {"StatelessWhile", "TensorListFromTensor", "TensorListReserve"}}


@pytest.fixture(scope="module", params=[1, 2], ids=["control-flow-v1", "control-flow-v2"])
def rnn(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[int, ReferenceModel,
                                                                                           ModelContract]:
    version = int(request.param)
    model = build_bidirectional_rnn(tmp_path_factory.mktemp(f"rnn_v{version}"), version=version)
    frozen = freeze_model(model.path, tmp_path_factory.mktemp(f"rnn_v{version}_frozen"),
                          FreezeOptions(outputs=model.outputs, batch=model.batch))
    return version, model, frozen.contract


def test_the_frozen_loop_is_the_control_flow_it_was_built_with(rnn: tuple[int, ReferenceModel, ModelContract]
                                                                ) -> None:
    version, model, contract = rnn
    graph_def = read_graph_def(contract.pb_path)
    ops = {node.op for node in graph_def.node} | {node.op for f in graph_def.library.function for node in f.node_def}
    assert LOOP_OPS[version] <= ops
    for name, value in zip(model.outputs, tf_outputs(contract, model.feeds), strict=True):
        np.testing.assert_allclose(value, model.expected[name], rtol=0, atol=1e-6)


def _converted(contract: ModelContract, mode: PrecisionMode, folder: Path) -> ModelContract:
    import shutil

    from infer.contract import load_contract

    shutil.copytree(contract.folder, folder)
    return convert_model(load_contract(folder / "model.json"), ConvertOptions(target="onnx", precision_mode=mode)
                         ).contract


@pytest.mark.parametrize("mode", PRECISION_MODES)
def test_the_loop_converts_in_every_precision_mode(rnn: tuple[int, ReferenceModel, ModelContract], mode: PrecisionMode,
                                                   tmp_path: Path) -> None:
    _version, model, contract = rnn
    converted = _converted(contract, mode, tmp_path / "model")
    for name, got in zip(model.outputs, onnx_outputs(converted, model.feeds), strict=True):
        expected = model.expected[name]
        assert got.shape == expected.shape, name
        assert cosine(got, expected) > 0.999, name
        assert np.abs(got - expected).max() < 5e-3, name


def test_every_op_planned_fp32_is_tensorflow_s_fp32(rnn: tuple[int, ReferenceModel, ModelContract],
                                                     tmp_path: Path) -> None:
    _version, model, contract = rnn
    converted = _converted(contract, "must_keep_origin_dtype", tmp_path / "model")
    for name, got in zip(model.outputs, onnx_outputs(converted, model.feeds), strict=True):
        np.testing.assert_allclose(got, model.expected[name], rtol=0, atol=2e-6, err_msg=name)


@pytest.mark.parametrize("version", [1, 2], ids=["control-flow-v1", "control-flow-v2"])
def test_a_loop_nested_in_a_loop_is_refused_naming_it(version: int, tmp_path: Path) -> None:
    """tf2onnx 1.17 converts a nested loop under neither control flow: the refusal names the loop and the way out."""
    import tensorflow as tf

    from infer.convert.errors import ConvertError
    from tests.builders.frozen import write_pb_and_contract
    from tests.recurrent_models import control_flow

    graph = tf.Graph()
    with control_flow(version), graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [2, 3], name="x")

        def outer(i: Any, value: Any) -> tuple[Any, Any]:
            _, inner = tf.while_loop(lambda j, v: j < 3, lambda j, v: (j + 1, v * 0.5 + tf.sin(v)), [0, value])
            return i + 1, inner + 1.0

        tf.reshape(tf.while_loop(lambda i, v: i < 4, outer, [0, x])[1], [2, 3], name="y")
    from infer.contract import SourceInfo

    contract = write_pb_and_contract(tmp_path / "model", graph.as_graph_def(), ("x:0",), ("y:0",),
                                     SourceInfo(path="nested", kind="pb", tf_version=tf.__version__,
                                                frozen_with_tf=tf.__version__))
    try:
        converted = convert_model(contract, ConvertOptions(target="onnx", precision_mode="must_keep_origin_dtype"))
    except ConvertError as refused:
        assert "tf2onnx cannot convert a loop nested in another loop's body: " in str(refused), str(refused)
        assert "unroll the inner loop" in (refused.hint or "")
    else:  # tf2onnx's TF1 loop rewriter sometimes gets through, by the names it numbered earlier in the process
        assert version == 1
        feeds = {"x:0": np.random.default_rng(3).normal(size=(2, 3)).astype(np.float32)}
        np.testing.assert_allclose(onnx_outputs(converted.contract, feeds)[0], tf_outputs(contract, feeds)[0],
                                   rtol=0, atol=1e-5)
