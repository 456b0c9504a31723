"""ATC's per-op precision controls on the stand-in: each one against numpy doing the same roundings by hand, the
record in model.json, the ATC argv, and the refusals."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from binio import reading
from infer.contract import ModelContract
from infer.convert._convert import ConvertOptions, convert_model
from tests.builders.frozen import write_frozen
from tests.cli import run_cli

pytestmark = pytest.mark.slow
f16 = np.float16


def _half(values: Any) -> np.ndarray:
    """fp16 storage: the value rounded to float16 (inf past 65504), read back as float32."""
    with np.errstate(over="ignore"):
        return np.asarray(values, dtype=np.float32).astype(f16).astype(np.float32)


def _run(contract: ModelContract, tmp_path: Path, x: np.ndarray, **options: Any) -> tuple[np.ndarray, dict[str, Any]]:
    """Converts a copy of the contract's folder (the fixtures stay unconverted) and runs it on x."""
    import shutil

    import onnxruntime

    from infer.contract import load_contract

    copy = tmp_path / f"model-{len(list(tmp_path.glob('model-*')))}"
    shutil.copytree(contract.folder, copy)
    converted = convert_model(load_contract(copy / "model.json"), ConvertOptions(target="onnx", **options)).contract
    assert converted.converted is not None
    session = onnxruntime.InferenceSession(str(converted.converted_path), providers=["CPUExecutionProvider"])
    return session.run(None, {"x:0": x})[0], converted.converted.settings["emulation"]


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _big_x() -> np.ndarray:
    return np.random.default_rng(0).uniform(250, 350, size=(2, 64)).astype(np.float32)


def test_keep_dtype_names_keep_those_ops_in_fp32_and_cast_at_the_boundary(energy_model: ModelContract,
                                                                           tmp_path: Path) -> None:
    x = _big_x()
    plain, _ = _run(energy_model, tmp_path, x, precision_mode="force_fp16")
    assert np.isinf(plain).all()  # x*x passes 65504
    keep = _write(tmp_path, "keep.cfg", "Square\ntotal\nSqrt\n")
    kept, emulation = _run(energy_model, tmp_path, x, precision_mode="force_fp16", keep_dtype=keep)
    # Square, Sum and Sqrt in fp32 (x not rounded: only the kept Square reads it); the division is fp16: its input
    # is cast to fp16 at the boundary, the product rounded.
    energy_fp32 = np.sqrt((x * x).sum(axis=1, dtype=np.float32))
    expected = _half(_half(energy_fp32) * np.float32(1 / 16))
    np.testing.assert_array_equal(kept, expected)
    assert [(r["node"], r["op_type"], r["compute"], r["onnx_nodes"]) for r in emulation["per_op"]] == [
        ("Square", "Square", "fp32", ["Square"]), ("total", "Sum", "fp32", ["total"]),
        ("Sqrt", "Sqrt", "fp32", ["Sqrt"])]
    assert emulation["op_controls"]["keep_dtype"] == {"names": ["Square", "total", "Sqrt"], "types": []}
    # Keeping the first op alone does not help: its fp32 output is cast to fp16 where the fp16 Sum reads it.
    first_only, _ = _run(energy_model, tmp_path, x, precision_mode="force_fp16",
                         keep_dtype=_write(tmp_path, "first.cfg", "Square\n"))
    assert np.isinf(_half(x * x)).any(axis=1).all() and np.isinf(first_only).all()


def test_keep_dtype_op_types_match_every_node_of_the_type(energy_model: ModelContract, tmp_path: Path) -> None:
    x = _big_x()
    by_name, _ = _run(energy_model, tmp_path, x, precision_mode="allow_fp32_to_fp16",
                      keep_dtype=_write(tmp_path, "names.cfg", "Square\ntotal\nSqrt\n"))
    by_type, emulation = _run(energy_model, tmp_path, x, precision_mode="allow_fp32_to_fp16",
                              keep_dtype=_write(tmp_path, "types.cfg", "OpType::Square\nOpType::Sum\nOpType::Sqrt\n"))
    np.testing.assert_array_equal(by_type, by_name)
    assert np.isfinite(by_type).all()
    assert emulation["op_controls"]["keep_dtype"]["types"] == ["Square", "Sum", "Sqrt"]


def test_modify_mixlist_moves_op_types_between_the_lists(matmul_sum_model: ModelContract, tmp_path: Path) -> None:
    x = np.full((2, 64), 2000.3, dtype=np.float32)
    default, _ = _run(matmul_sum_model, tmp_path, x, precision_mode="allow_mix_precision")
    # By Ascend310's table: MatMulV2 white (fp16 in, fp16 out); TF Sum becomes ReduceSumD, gray: it follows the
    # fp16 product, and 128019 is past fp16's range.
    projected = _half(_half(x) @ np.eye(64, dtype=np.float32))
    assert np.isinf(_half(projected.sum(axis=1))).all() and np.isinf(default).all()
    for name in ("Sum", "ReduceSumD"):  # the TF type or the Ascend op it becomes
        black_sum = _write(tmp_path, f"black-{name}.json", json.dumps({"black-list": {"to-add": [name]}}))
        summed_in_fp32, emulation = _run(matmul_sum_model, tmp_path, x, precision_mode="allow_mix_precision",
                                         modify_mixlist=black_sum)
        # Sum black: fp32; the division, gray after an fp32 op: fp32.
        np.testing.assert_allclose(summed_in_fp32, projected.sum(axis=1) / 1024, rtol=1e-6)
        assert emulation["op_controls"]["modify_mixlist"] == {"black-list": {"to-add": [name], "to-remove": []}}
    black_matmul = _write(tmp_path, "black.json", json.dumps({"black-list": {"to-add": ["MatMul"]},
                                                              "white-list": {"to-remove": ["MatMul"]}}))
    exact, _ = _run(matmul_sum_model, tmp_path, x, precision_mode="allow_mix_precision", modify_mixlist=black_matmul)
    # MatMul black: x and the product stay fp32 (2000.3 is not rounded to 2000), and the gray ops after it too.
    np.testing.assert_allclose(exact, (x @ np.eye(64, dtype=np.float32)).sum(axis=1) / 1024, rtol=1e-6)
    assert not np.allclose(exact, summed_in_fp32, rtol=1e-6)


def test_customize_dtypes_sets_each_ops_dtypes_over_keep_dtype(energy_model: ModelContract, tmp_path: Path) -> None:
    # Near 1/3, which fp16 rounds down by 1.5e-4 (relative): an error that does not average out over the sum.
    x = (1 / 3 + np.random.default_rng(1).uniform(0, 1e-5, size=(2, 64))).astype(np.float32)
    rule = _write(tmp_path, "custom.cfg", "Square::InputDtype:float16,OutputDtype:float32\n")
    customized, emulation = _run(energy_model, tmp_path, x, precision_mode="force_fp32", customize_dtypes=rule)
    # Everything fp32 but Square's input, read as fp16.
    expected = np.sqrt((_half(x) ** 2).sum(axis=1, dtype=np.float32)) / 16
    plain = np.sqrt((x * x).sum(axis=1, dtype=np.float32)) / 16
    np.testing.assert_allclose(customized, expected, rtol=1e-6)
    assert (np.abs(customized - plain) / plain).min() > 1e-4
    assert emulation["per_op"][0]["input_dtypes"] == ["float16"]
    over_keep = _write(tmp_path, "over.cfg", "total::InputDtype:float32,float32,OutputDtype:float16\n")
    big = _big_x()
    kept, _ = _run(energy_model, tmp_path, big, precision_mode="force_fp16",
                   keep_dtype=_write(tmp_path, "keep.cfg", "Square\ntotal\nSqrt\n"), customize_dtypes=over_keep)
    # keep_dtype keeps total in fp32, customize_dtypes (applied over it) stores its output in fp16: inf.
    assert np.isinf(_half((big * big).sum(axis=1))).all() and np.isinf(kept).all()


def test_unknown_names_and_types_are_refused_with_the_closest(energy_model: ModelContract, copy_model: Any,
                                                              tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                                              ) -> None:
    contract = copy_model(energy_model)
    keep = _write(tmp_path, "keep.cfg", "Squar\n")
    outcome = run_cli(capsys, "convert", contract.path, "--target", "onnx", "--keep-dtype", keep)
    assert outcome.code == 2
    assert outcome.error_line == (f"error: --keep-dtype: op 'Squar' is not a node of {contract.pb_path} (8 nodes); "
                                  "closest: Square, Sqrt")
    kinds = _write(tmp_path, "kinds.cfg", "OpType::Sqaure\n")
    outcome = run_cli(capsys, "convert", contract.path, "--target", "onnx", "--keep-dtype", kinds)
    assert outcome.error_line.startswith("error: --keep-dtype: op type 'Sqaure' is neither an Ascend IR type the "
                                         "stand-in maps nor a type in ")
    assert outcome.error_line.endswith("; closest: Square, Squeeze, Sqrt")
    mixlist = _write(tmp_path, "mix.json", json.dumps({"black-list": {"to-add": ["Sum"]}}))
    outcome = run_cli(capsys, "convert", contract.path, "--target", "onnx", "--modify-mixlist", mixlist)
    assert outcome.error_line == (f"error: --modify-mixlist {mixlist}: ATC takes it only with --precision-mode "
                                  "allow_mix_precision, not force_fp16")
    bad = _write(tmp_path, "bad.cfg", "Square::InputDtype:int8,OutputDtype:float16\n")
    outcome = run_cli(capsys, "convert", contract.path, "--target", "onnx", "--customize-dtypes", bad)
    assert outcome.error_line == ("error: --customize-dtypes Square: inputs int8, outputs float16: the ONNX stand-in "
                                  "emulates float32 and float16 only, not int8")
    assert contract.converted is None and not (contract.folder / "model.onnx").exists()


def test_the_controls_go_into_atcs_argv(energy_model: ModelContract, copy_model: Any, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    contract = copy_model(energy_model)
    keep = _write(tmp_path, "keep.cfg", "Square\nOpType::Sqrt\n")
    mixlist = _write(tmp_path, "mix.json", json.dumps({"gray-list": {"to-add": ["Sqrt"]}}))
    custom = _write(tmp_path, "custom.cfg", "OpType::Sum:InputDtype:float32,OutputDtype:float32\n")
    outcome = run_cli(capsys, "convert", contract.path, "--target", "om", "--soc-version", "Ascend310",
                      "--precision-mode", "allow_mix_precision", "--keep-dtype", keep, "--modify-mixlist", mixlist,
                      "--customize-dtypes", custom, "--dry-run")
    assert outcome.code == 0, outcome.err
    command = outcome.out.splitlines()[0]
    assert command.endswith(f" --precision_mode=allow_mix_precision --keep_dtype={keep} "
                            f"--modify_mixlist={mixlist} --customize_dtypes={custom}")


def test_keep_dtype_under_must_keep_origin_dtype_is_said_to_do_nothing(energy_model: ModelContract, copy_model: Any,
                                                                       tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    contract = copy_model(energy_model)
    keep = _write(tmp_path, "keep.cfg", "Square\n")
    outcome = run_cli(capsys, "convert", contract.path, "--target", "onnx", "--precision-mode",
                      "must_keep_origin_dtype", "--keep-dtype", keep)
    assert outcome.code == 0, outcome.err
    assert "--keep-dtype has no effect: ATC ignores it under must_keep_origin_dtype" in outcome.err
    settings = json.loads(contract.path.read_text())["converted"]["settings"]
    assert settings["emulation"]["per_op"] == [] and settings["emulation"]["rounded_tensors"] == 0


def test_the_op_type_table_names_the_onnx_ops_each_tf_op_becomes(tmp_path: Path) -> None:
    """Every TF op of a small CNN, kept by type: the ONNX nodes the emulation finds for it are of the types the
    table gives for its TF type."""
    import onnx

    from atc_wrap.precision.op_types import ONNX_OPS_OF_TF
    from tests.builders.graphs import build_underflow

    contract = write_frozen(tmp_path / "cnn", build_underflow, ("x:0",), ("probs:0",))
    kinds = ("Conv2D", "Mul", "AddV2", "Log", "Relu", "Mean", "MatMul", "Softmax")
    keep = _write(tmp_path, "keep.cfg", "".join(f"OpType::{kind}\n" for kind in kinds))
    # Conv2D has no fp32 kernel on Ascend310: --keep-dtype on it is what ATC refuses, let through here
    converted = convert_model(contract, ConvertOptions(target="onnx", keep_dtype=keep, allow_unsupported=True)).contract
    assert converted.converted is not None and converted.converted_path is not None
    op_types = {node.name: node.op_type for node in onnx.load(str(converted.converted_path)).graph.node}
    records = converted.converted.settings["emulation"]["per_op"]
    assert {r["op_type"] for r in records} == set(kinds)
    for record in records:
        assert record["onnx_nodes"], record
        found = {op_types[name] for name in record["onnx_nodes"]}
        assert found <= set(ONNX_OPS_OF_TF[record["op_type"]]), (record["node"], found)


def _build_type_named(tf: Any) -> None:
    """A conv whose relu feeds two reshapes (tf2onnx's optimiser inserts a Transpose before each, naming it
    ``Transpose__<n>``) and a TF node named ``Transpose`` itself (a Square), so the two kinds of name collide."""
    x = tf.compat.v1.placeholder(tf.float32, [2, 8, 8, 3], name="x")
    kernel = tf.constant(np.random.default_rng(0).normal(size=(3, 3, 3, 4)).astype(np.float32), name="kernel")
    relu = tf.nn.relu(tf.nn.conv2d(x, kernel, 1, "SAME", name="conv"), name="relu")
    flat = tf.reshape(relu, [2, -1], name="flat")
    shifted = tf.reshape(tf.add(relu, tf.constant(np.arange(4, dtype=np.float32)), name="shift"), [2, -1],
                         name="flat2")
    energy = tf.reduce_sum(tf.square(x, name="Transpose"), axis=[1, 2], name="energy")
    tf.concat([flat, shifted, energy], axis=1, name="out")


def test_nodes_tf2onnx_names_after_their_op_type_are_not_taken_for_a_tf_node_of_that_name(
        tmp_path: Path) -> None:
    import onnx

    contract = write_frozen(tmp_path / "model", _build_type_named, ("x:0",), ("out:0",))
    keep = _write(tmp_path, "keep.cfg", "Transpose\nconv\n")
    converted = convert_model(contract, ConvertOptions(target="onnx", precision_mode="force_fp16",
                                                       keep_dtype=keep, allow_unsupported=True)).contract
    assert converted.converted is not None and converted.converted_path is not None
    nodes = {node.name: node.op_type for node in onnx.load(str(converted.converted_path)).graph.node}
    inserted = sorted(name for name, kind in nodes.items() if kind == "Transpose" and name.startswith("Transpose__"))
    assert inserted, nodes  # the situation: the optimiser's transposes are there, named like the TF node's helpers
    applied = {r["node"]: r["onnx_nodes"] for r in converted.converted.settings["emulation"]["per_op"]}
    assert applied["Transpose"] == ["Transpose"]  # the Square only, none of the inserted transposes
    assert "conv" in applied["conv"] and any(name.startswith("conv__") for name in applied["conv"])  # its helper
    from atc_wrap.standin.converter_names import read_type_named

    recorded = read_type_named(onnx.load(str(converted.converted_path)))
    assert set(inserted) <= recorded and not recorded & {"conv", "Transpose", "relu"}


def test_each_control_file_is_read_once_and_its_text_recorded(energy_model: ModelContract, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """What model.json records is the very text that was parsed: one read of each file, not one per use."""
    keep = _write(tmp_path, "keep.cfg", "# kept in fp32\nSquare\n")
    mixlist = _write(tmp_path, "mix.json", json.dumps({"gray-list": {"to-add": ["Sqrt"]}}))
    real = reading.read_bounded
    reads: list[Path] = []

    def counting(path: Path, **kwargs: Any) -> bytes:  # binio.reading reads a user's file, bounded, then decodes it
        if Path(path).parent == tmp_path:
            reads.append(Path(path))
        return real(path, **kwargs)

    monkeypatch.setattr(reading, "read_bounded", counting)
    _, emulation = _run(energy_model, tmp_path, _big_x(), precision_mode="allow_mix_precision", keep_dtype=keep,
                        modify_mixlist=mixlist)
    assert sorted(reads) == sorted([keep, mixlist])
    assert emulation["op_controls"]["keep_dtype"] == {"names": ["Square"], "types": []}
    converted = json.loads((sorted(tmp_path.glob("model-*"))[-1] / "model.json").read_text())
    assert converted["converted"]["settings"]["op_control_files"] == {
        "keep_dtype": "# kept in fp32\nSquare\n", "modify_mixlist": json.dumps({"gray-list": {"to-add": ["Sqrt"]}})}
