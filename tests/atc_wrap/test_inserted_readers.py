"""A weight follows the dtype its real reader computes in, as the plan says, where tf2onnx hands it to a node it named
itself (a Gemm fused from MatMul + Add, a depthwise Conv with its bias folded in): with every op planned fp32 no
weight is rounded and the stand-in is TensorFlow's fp32; under force_fp32 the Gemm reads fp16 as the MatMul's plan
says; a --keep-dtype naming the MatMul keeps the Gemm and its weights in fp32."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from infer.contract import ModelContract
from tests.atc_wrap.conftest import Convert
from tests.atc_wrap.fused_graphs import build_inserted_readers
from tests.atc_wrap.outputs import onnx_outputs, tf_outputs
from tests.builders.frozen import write_frozen

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def inserted_readers(tmp_path_factory: pytest.TempPathFactory) -> ModelContract:
    return write_frozen(tmp_path_factory.mktemp("inserted_readers"), build_inserted_readers, ("x:0", "s:0"),
                        ("out:0",))


def _feeds(seed: int = 3) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"x:0": rng.standard_normal((2, 8, 8, 3)).astype(np.float32),
            "s:0": rng.standard_normal((2, 16, 4)).astype(np.float32)}


def _model(contract: ModelContract) -> Any:
    import onnx

    assert contract.converted_path is not None
    return onnx.load(str(contract.converted_path))


def _weights(model: Any) -> dict[str, np.ndarray]:
    from onnx import numpy_helper

    return {t.name: numpy_helper.to_array(t) for t in model.graph.initializer if t.data_type == 1}


def _on_fp16_grid(values: np.ndarray) -> bool:
    return bool(np.array_equal(values.astype(np.float16).astype(np.float32), values))


def _named_by_tf2onnx(model: Any, op_type: str) -> Any:
    """The one node of `op_type` tf2onnx named itself (no TF node of that name in the pb)."""
    found = [n for n in model.graph.node if n.op_type == op_type and "__" in n.name]
    assert len(found) == 1, [n.name for n in model.graph.node]
    return found[0]


def test_every_op_planned_fp32_rounds_no_weight(inserted_readers: ModelContract, converted: Convert) -> None:
    contract = converted(inserted_readers, precision_mode="must_keep_origin_dtype", allow_unsupported=True)
    assert contract.converted is not None
    plan = contract.converted.plan()
    assert plan is not None and all(op.dtype == "float32" for op in plan.ops)
    emulation = contract.converted.settings["emulation"]
    assert (emulation["rounded_weights"], emulation["rounded_tensors"]) == (0, 0)
    model = _model(contract)
    gemm, depthwise = _named_by_tf2onnx(model, "Gemm"), _named_by_tf2onnx(model, "Conv")
    weights = _weights(model)
    read_by_them = [name for name in (*gemm.input, *depthwise.input) if name in weights]
    assert len(read_by_them) == 4 and not any(_on_fp16_grid(weights[name]) for name in read_by_them)
    got, expected = onnx_outputs(contract, _feeds())[0], tf_outputs(contract, _feeds())[0]
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-7)


def test_force_fp32_gives_the_gemm_the_matmuls_fp16_input(inserted_readers: ModelContract,
                                                          converted: Convert) -> None:
    contract = converted(inserted_readers, precision_mode="force_fp32", allow_unsupported=True)
    assert contract.converted is not None
    plan = contract.converted.plan()
    dense = plan.op("dense") if plan is not None else None
    assert dense is not None and dense.dtype == "float16->float32"
    model = _model(contract)
    gemm = _named_by_tf2onnx(model, "Gemm")
    weights = _weights(model)
    assert gemm.input[0].endswith("/rounded")  # cast to fp16 at its boundary, as ATC casts the MatMul's input
    assert _on_fp16_grid(weights[gemm.input[1]])  # the MatMul's weight, read in fp16
    assert not gemm.output[0].endswith("/fp32")  # fp32 out (the Add's): not rounded after it


def test_keep_dtype_on_the_matmul_reaches_the_gemm(inserted_readers: ModelContract, tmp_path: Path,
                                                   converted: Convert) -> None:
    keep = tmp_path / "keep_dtype.cfg"
    keep.write_text("dense\n")
    contract = converted(inserted_readers, precision_mode="force_fp16", keep_dtype=keep)
    model = _model(contract)
    gemm = _named_by_tf2onnx(model, "Gemm")
    weights = _weights(model)
    assert not _on_fp16_grid(weights[gemm.input[1]])  # the kept MatMul reads its weight in fp32
    assert contract.converted is not None
    record = {r["node"]: r for r in contract.converted.settings["emulation"]["per_op"]}
    assert record["dense"]["onnx_nodes"] == [gemm.name] and "note" not in record["dense"]
    plain = _model(converted(inserted_readers, precision_mode="force_fp16"))
    assert _on_fp16_grid(_weights(plain)[_named_by_tf2onnx(plain, "Gemm").input[1]])  # not kept: fp16


def test_inserted_ops_finds_what_a_node_named_by_tf2onnx_computes(inserted_readers: ModelContract,
                                                                  converted: Convert) -> None:
    from atc_wrap.standin._inserted_ops import inserted_ops
    from atc_wrap.standin.converter_names import read_type_named
    from atc_wrap.standin.emulation import tf_origin
    from ckpt2pb.protobuf import read_graph_def

    graph_def = read_graph_def(inserted_readers.pb_path)
    model = _model(converted(inserted_readers, precision_mode="force_fp16"))
    tf_nodes = {node.name for node in graph_def.node}
    origin = {n.name: tf_origin(n.name, tf_nodes, read_type_named(model)) for n in model.graph.node}
    found = inserted_ops(model, graph_def, origin)
    gemm, depthwise = _named_by_tf2onnx(model, "Gemm"), _named_by_tf2onnx(model, "Conv")
    assert found == {gemm.name: ("dense", "dense_bias"), depthwise.name: ("depthwise", "depthwise_bias")}
