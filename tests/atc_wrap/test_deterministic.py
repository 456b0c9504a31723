"""`infer convert` to the ONNX stand-in writes the same bytes for the same pb, however many conversions the process
made before (tf2onnx numbers the names it makes from one counter of its process)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from infer.contract import ModelContract, load_contract
from infer.convert._convert import ConvertOptions, convert_model

pytestmark = pytest.mark.slow


def _convert(contract: ModelContract, folder: Path, mode: str) -> bytes:
    shutil.copytree(contract.folder, folder)
    result = convert_model(load_contract(folder / "model.json"), ConvertOptions(target="onnx", precision_mode=mode))
    return result.artefact.read_bytes()


@pytest.mark.parametrize("mode", ["force_fp16", "force_fp32"])
def test_two_identical_converts_write_identical_bytes(frozen_small_cnn: ModelContract, tmp_path: Path,
                                                     mode: str) -> None:
    import onnx

    first = _convert(frozen_small_cnn, tmp_path / "first", mode)
    second = _convert(frozen_small_cnn, tmp_path / "second", mode)
    assert first == second
    names = [node.name for node in onnx.load_from_string(first).graph.node]
    assert "BiasAdd" in names and "BiasAdd__1" in names  # tf2onnx's helper of the TF node, numbered from 1


def test_generated_names_are_renumbered_and_the_tf_graphs_kept() -> None:
    from onnx import TensorProto, helper

    from atc_wrap.generated_names import renumber_generated_names

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["layer__40:0"], name="layer__40"),  # a TF node's own name
         helper.make_node("Neg", ["layer__40:0"], ["layer__40__57:0"], name="layer__40__57"),
         helper.make_node("Abs", ["layer__40__57:0"], ["Abs__61:0"], name="Abs__61")],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("Abs__61:0", TensorProto.FLOAT, [1])])
    model = helper.make_model(graph)
    renamed = renumber_generated_names(model, {"x", "layer__40"}, range(41, 70))
    assert renamed == {"layer__40__57": "layer__40__1", "layer__40__57:0": "layer__40__1:0", "Abs__61": "Abs__2",
                       "Abs__61:0": "Abs__2:0"}
    assert [(n.name, list(n.input), list(n.output)) for n in model.graph.node] == [
        ("layer__40", ["x"], ["layer__40:0"]), ("layer__40__1", ["layer__40:0"], ["layer__40__1:0"]),
        ("Abs__2", ["layer__40__1:0"], ["Abs__2:0"])]
    assert model.graph.output[0].name == "Abs__2:0"


def test_a_tf_name_holding_a_drawn_number_keeps_it_and_its_origin() -> None:
    from onnx import TensorProto, helper

    from atc_wrap.emulation import tf_origin
    from atc_wrap.generated_names import renumber_generated_names

    # TF scopes named a__3 and a__1 (a user's names), with helpers tf2onnx numbered 6 and 8 from a counter at 2.
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["a__3/conv:0"], name="a__3/conv"),
         helper.make_node("Neg", ["a__3/conv:0"], ["a__3/conv__6:0"], name="a__3/conv__6"),
         helper.make_node("Relu", ["a__3/conv__6:0"], ["a__1/conv:0"], name="a__1/conv"),
         helper.make_node("Abs", ["a__1/conv:0"], ["a__1/conv__8:0"], name="a__1/conv__8")],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("a__1/conv__8:0", TensorProto.FLOAT, [1])])
    model = helper.make_model(graph)
    tf_nodes = {"x", "a__3/conv", "a__1/conv"}
    renumber_generated_names(model, tf_nodes, range(2, 10))
    names = [n.name for n in model.graph.node]
    assert names == ["a__3/conv", "a__3/conv__1", "a__1/conv", "a__1/conv__2"]
    assert [tf_origin(n, tf_nodes) for n in names] == ["a__3/conv", "a__3/conv", "a__1/conv", "a__1/conv"]


def test_a_new_name_that_is_a_pruned_tf_node_leaves_the_names_as_they_are() -> None:
    from onnx import TensorProto, helper

    from atc_wrap.generated_names import renumber_generated_names

    graph = helper.make_graph([helper.make_node("Neg", ["x"], ["Neg__7:0"], name="Neg__7")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("Neg__7:0", TensorProto.FLOAT, [1])])
    model = helper.make_model(graph)
    assert renumber_generated_names(model, {"x", "Neg__1"}, range(2, 10)) == {}  # Neg__1: a TF node tf2onnx dropped
    assert model.graph.node[0].name == "Neg__7"
