"""`infer convert` to the ONNX stand-in writes the same bytes for the same pb, however many conversions the process
made before (tf2onnx numbers the names it makes from one counter of its process)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from atc_wrap.precision.modes import PrecisionMode
from infer.contract import ModelContract, load_contract
from infer.convert._convert import ConvertOptions, convert_model

pytestmark = pytest.mark.slow


def _convert(contract: ModelContract, folder: Path, mode: PrecisionMode) -> bytes:
    shutil.copytree(contract.folder, folder)
    result = convert_model(load_contract(folder / "model.json"), ConvertOptions(target="onnx", precision_mode=mode))
    return result.artefact.read_bytes()


@pytest.mark.parametrize("mode", ["force_fp16", "force_fp32"])
def test_two_identical_converts_write_identical_bytes(frozen_small_cnn: ModelContract, tmp_path: Path,
                                                     mode: PrecisionMode) -> None:
    import onnx

    first = _convert(frozen_small_cnn, tmp_path / "first", mode)
    second = _convert(frozen_small_cnn, tmp_path / "second", mode)
    assert first == second
    names = [node.name for node in onnx.load_from_string(first).graph.node]
    assert "BiasAdd" in names and "BiasAdd__1" in names  # tf2onnx's helper of the TF node, numbered from 1


def test_generated_names_are_renumbered_and_the_tf_graphs_kept() -> None:
    from onnx import TensorProto, helper

    from atc_wrap.standin._generated_names import renumber_generated_names

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

    from atc_wrap.standin._generated_names import renumber_generated_names
    from atc_wrap.standin.emulation import tf_origin

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

    from atc_wrap.standin._generated_names import renumber_generated_names

    graph = helper.make_graph([helper.make_node("Neg", ["x"], ["Neg__7:0"], name="Neg__7")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("Neg__7:0", TensorProto.FLOAT, [1])])
    model = helper.make_model(graph)
    assert renumber_generated_names(model, {"x", "Neg__1"}, range(2, 10)) == {}  # Neg__1: a TF node tf2onnx dropped
    assert model.graph.node[0].name == "Neg__7"


def test_processes_with_other_hash_seeds_write_identical_bytes(tmp_path: Path) -> None:
    """tf2onnx breaks ties in its node order, and picks the one of two equal constants it keeps, in orders Python's
    hash seed decides: the demo's ResNet (two bottleneck blocks, batch norms folded into zero biases) converted in
    processes with three hash seeds gives one file."""
    import os
    import subprocess
    import sys

    from infer.demo._model import build_demo_model

    model = build_demo_model(tmp_path / "ckpt")
    frozen = tmp_path / "model"
    probe = ("import sys; from infer.cli.app import main; main(sys.argv[1:])")
    subprocess.run([sys.executable, "-c", probe, "freeze", str(model.prefix), "-o", str(frozen), "--outputs",
                    model.output, "--batch", "2", "--set", "is_training=false", "--no-verify", "-q"], check=True,
                   capture_output=True, timeout=300)
    digests = set()
    for seed in ("1", "2", "3"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        subprocess.run([sys.executable, "-c", probe, "convert", str(frozen / "model.json"), "--target", "onnx",
                        "-o", str(frozen / f"seed{seed}.onnx"), "-q"], check=True, capture_output=True, timeout=300,
                       env=env)
        digests.add((frozen / f"seed{seed}.onnx").read_bytes())
    assert len(digests) == 1


def test_tf1_loops_convert_to_one_file_in_any_process(tmp_path: Path) -> None:
    """A bidirectional dynamic_rnn under control flow v1: tf2onnx's TF1 loop rewriter takes a Loop's carried state
    in the order of a set of consumers, rewrites the two loops in an order the hash seed decides and names their
    bodies with numbers it draws (one of them at its module's import, inside the first conversion): three hash
    seeds, one file, and the same file converted again in one process."""
    import os
    import subprocess
    import sys

    from tests.model_registry import registered

    contract = registered("bidirectional_rnn_v1").build(tmp_path / "built")
    probe = "import sys; from infer.cli.app import main; main(sys.argv[1:])"
    digests = set()
    for seed in ("1", "2", "3"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        subprocess.run([sys.executable, "-c", probe, "convert", str(contract.path), "--target", "onnx",
                        "-o", str(contract.folder / f"seed{seed}.onnx"), "-q"], check=True, capture_output=True,
                       timeout=300, env=env)
        digests.add((contract.folder / f"seed{seed}.onnx").read_bytes())
    for again in ("again1.onnx", "again2.onnx"):
        convert_model(contract, ConvertOptions(target="onnx", output=contract.folder / again))
        digests.add((contract.folder / again).read_bytes())
    assert len(digests) == 1


def test_canonical_order_is_topological_ties_by_name_and_initializers_by_name() -> None:
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    from atc_wrap.standin._generated_names import canonical_order, name_shared_initializers

    zero = numpy_helper.from_array(np.zeros(1, np.float32), "b/bias_fused")
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "b/bias_fused"], ["b:0"], name="b"),
         helper.make_node("Add", ["x", "b/bias_fused"], ["a:0"], name="a"),
         helper.make_node("Sum", ["a:0", "b:0"], ["out"], name="out")],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1])],
        [numpy_helper.from_array(np.ones(1, np.float32), "w"), zero])
    model = helper.make_model(graph)
    assert name_shared_initializers(model, {"a", "b", "out", "x"}) == {"b/bias_fused": "a/shared_1"}
    canonical_order(model)
    assert [n.name for n in model.graph.node] == ["a", "b", "out"]
    assert [t.name for t in model.graph.initializer] == ["a/shared_1", "w"]


def test_numbers_drawn_in_another_order_give_the_same_names() -> None:
    """tf2onnx folds constants in an order that follows object addresses: the same graph with its two folded
    constants numbered the other way round renames to the same model."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    from atc_wrap.standin._generated_names import renumber_generated_names

    def model(first: int, second: int) -> bytes:
        graph = helper.make_graph(
            [helper.make_node("Add", ["x", f"const_fold_opt__{first}"], ["a:0"], name="a"),
             helper.make_node("Mul", ["a:0", f"const_fold_opt__{second}"], ["m:0"], name="m")],
            "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
            [helper.make_tensor_value_info("m:0", TensorProto.FLOAT, [1])],
            [numpy_helper.from_array(np.ones(1, np.float32), f"const_fold_opt__{first}"),
             numpy_helper.from_array(np.full(1, 2, np.float32), f"const_fold_opt__{second}")])
        built = helper.make_model(graph)
        renumber_generated_names(built, {"x", "a", "m"}, range(10, 20))
        built.graph.initializer.sort(key=lambda tensor: tensor.name)
        return built.SerializeToString(deterministic=True)

    assert model(12, 13) == model(13, 12)
