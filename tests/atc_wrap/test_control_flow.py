"""Control flow kept live (a cond on a model input, a while loop, a cond inside a loop) converts in every precision
mode, and the stand-in computes what TensorFlow computes: what rewrites tf2onnx's graph (renumbering, the canonical
order, the emulation) counts the names an If's branches or a Loop's body read from the graph around them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from atc_wrap.precision.modes import PRECISION_MODES
from infer.contract import ModelContract
from tests.atc_wrap.conftest import Convert
from tests.atc_wrap.control_flow_graphs import CONTROL_FLOW_GRAPHS, feeds
from tests.atc_wrap.outputs import onnx_outputs, tf_outputs
from tests.builders.frozen import write_frozen

_FP32_MODES = ("must_keep_origin_dtype",)  # every op of these graphs planned fp32 (force_fp32: MatMul fp16 in)


@pytest.fixture(scope="module")
def control_flow(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ModelContract]:
    return {name: write_frozen(tmp_path_factory.mktemp(name), build, inputs, outputs)
            for name, (build, inputs, outputs) in CONTROL_FLOW_GRAPHS.items()}


def _kinds(contract: ModelContract) -> set[str]:
    import onnx

    assert contract.converted_path is not None
    return {node.op_type for node in onnx.load(str(contract.converted_path)).graph.node}


@pytest.mark.slow
@pytest.mark.parametrize("mode", PRECISION_MODES)
@pytest.mark.parametrize("name", sorted(CONTROL_FLOW_GRAPHS))
def test_control_flow_converts_and_computes_as_tensorflow(control_flow: dict[str, ModelContract],
                                                         converted: Convert, name: str, mode: str) -> None:
    contract = converted(control_flow[name], precision_mode=mode, allow_unsupported=True)
    assert _kinds(contract) & {"If", "Loop"}  # the control flow is live in the ONNX model
    batch = feeds(name, contract)
    got, expected = onnx_outputs(contract, batch)[0], tf_outputs(contract, batch)[0]
    assert contract.converted is not None
    emulation = contract.converted.settings["emulation"]
    if mode in _FP32_MODES:
        assert emulation["rounded_weights"] == emulation["rounded_tensors"] == 0
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    else:
        assert np.isfinite(got).all()
        np.testing.assert_allclose(got, expected, rtol=0, atol=3e-2)


@pytest.mark.slow
def test_a_float16_input_and_output_around_control_flow(control_flow: dict[str, ModelContract],
                                                        converted: Convert) -> None:
    """The fp16 input widened before the graph (its readers inside the branches read the widened one), the output
    narrowed after it: bodies that read either by name still read a tensor made before them."""
    contract = converted(control_flow["cond_v2"], precision_mode="force_fp16", input_fp16_nodes="x",
                         output_type="FP16")
    batch = feeds("cond_v2", contract)
    for flag in (False, True):
        batch["flag:0"] = np.asarray(flag)
        got, expected = onnx_outputs(contract, batch)[0], tf_outputs(contract, batch)[0]
        assert got.dtype == np.float16
        np.testing.assert_allclose(got.astype(np.float32), expected, rtol=0, atol=3e-2)


@pytest.mark.slow
def test_a_live_cond_converts_from_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The issue's situation as a user meets it: `freeze --inputs x:0,is_training:0` kept the dropout's switch."""
    from tests.atc_wrap.control_flow_graphs import build_cond_dropout
    from tests.cli import run_cli

    contract = write_frozen(tmp_path / "cond", build_cond_dropout, ("x:0", "is_training:0"), ("out:0",))
    for mode in ("force_fp16", "must_keep_origin_dtype"):
        # its Conv2D has no fp32 kernel on Ascend310 (op_select_format): must_keep_origin_dtype is let through
        allow = ("--allow-unsupported",) if mode == "must_keep_origin_dtype" else ()
        result = run_cli(capsys, "convert", contract.path, "--target", "onnx", "--precision-mode", mode,
                         "-o", contract.folder / f"{mode}.onnx", *allow)
        assert result.code == 0, result.err


def _model(nodes: list[Any], outputs: list[str], inputs: tuple[str, ...] = ("x",)) -> Any:
    from onnx import TensorProto, helper

    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2]) for n in inputs],
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2]) for n in outputs])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _if(name: str, condition: str, then_reads: str, else_reads: str, output: str) -> Any:
    from onnx import TensorProto, helper

    def branch(label: str, reads: str) -> Any:
        return helper.make_graph([helper.make_node("Neg", [reads], [f"{name}/{label}:0"], name=f"{name}/{label}")],
                                 f"{name}_{label}", [],
                                 [helper.make_tensor_value_info(f"{name}/{label}:0", TensorProto.FLOAT, [2])])

    return helper.make_node("If", [condition], [output], name=name, then_branch=branch("then", then_reads),
                            else_branch=branch("else", else_reads))


def test_canonical_order_puts_an_if_after_what_its_branches_read() -> None:
    import onnx
    from onnx import helper

    from atc_wrap.standin._generated_names import canonical_order

    # "a_if" sorts before "z_relu", whose output only its branches read: by name alone it would come first.
    nodes = [helper.make_node("Relu", ["x"], ["relu:0"], name="z_relu"),
             helper.make_node("Cast", ["x"], ["flag:0"], name="flag", to=onnx.TensorProto.BOOL),
             _if("a_if", "flag:0", "relu:0", "x", "out")]
    model = _model(nodes, ["out"])
    canonical_order(model)
    assert [node.name for node in model.graph.node] == ["flag", "z_relu", "a_if"]
    onnx.checker.check_model(model, full_check=True)


def test_outer_reads_look_through_nesting_and_skip_what_a_body_defines() -> None:
    from onnx import TensorProto, helper

    from atc_wrap.standin.subgraphs import outer_reads, rename_outer_reads

    inner = _if("inner", "flag:0", "outer_a", "h", "inner:0")  # h: the body's own tensor; outer_a: the graph's
    body = helper.make_graph(
        [helper.make_node("Identity", ["state_in"], ["h"], name="h"), inner,
         helper.make_node("Add", ["inner:0", "outer_b"], ["state_out"], name="add")],
        "body", [helper.make_tensor_value_info(n, t, []) for n, t in
                 (("i", TensorProto.INT64), ("c", TensorProto.BOOL), ("state_in", TensorProto.FLOAT))],
        [helper.make_tensor_value_info(n, t, []) for n, t in (("c", TensorProto.BOOL),
                                                               ("state_out", TensorProto.FLOAT))])
    loop = helper.make_node("Loop", ["trips", "", "x"], ["final"], name="loop", body=body)
    assert outer_reads(loop) == ["flag:0", "outer_a", "outer_b"]
    rename_outer_reads(loop, {"outer_a": "outer_a/rounded", "h": "not_this_one", "outer_b": "outer_b/wide"})
    assert outer_reads(loop) == ["flag:0", "outer_a/rounded", "outer_b/wide"]
    branches = {attribute.name: attribute.g for attribute in loop.attribute[0].g.node[1].attribute}  # copies
    assert list(branches["then_branch"].node[0].input) == ["outer_a/rounded"]
    assert list(branches["else_branch"].node[0].input) == ["h"]  # the body's own h is left alone
