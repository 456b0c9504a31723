"""Batches, converted-model stand-ins and fake Ascend tools for the tests of `infer run` and its runners (the bins
themselves are written by tests/builders/bins.py).

Plain functions, not fixtures, so both tests/infer/test_run.py and tests/infer/run/runners/ use them.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from atc_wrap.target import Target
from binio.binfile import sha256_file
from binio.gears import BATCH, DIMS, IMAGE_SIZE, RANGE, DynamicShape
from binio.names import node_name
from binio.spec import TensorSpec
from infer.contract import ConvertedInfo, ModelContract, SourceInfo
from tests.infer.om_files import OmPlan, write_om

FAKES = Path(__file__).resolve().parent.parent / "fakes"


def cnn_batches(count: int = 3, *, seed: int = 0, batch: int = 2) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((batch, 8, 8, 3)).astype(np.float32) for _ in range(count)]


def as_om(contract: ModelContract, folder: Path) -> ModelContract:
    """A copy of an ONNX-converted contract posing as an ATC one: model.om, which the fakes run as model.onnx. A
    static one is a real om (its header, a MODEL_DEF with the Data ops and the NetOutput of the contract's specs),
    read by infer as any om; a gear one is the fakes' JSON document (tests/fakes/fake_gears.py)."""
    assert contract.converted is not None and contract.converted.target == "onnx"
    shutil.copytree(contract.folder, folder)
    onnx_path = folder / contract.converted.path
    om = folder / "model.om"
    if contract.gears is not None:  # the gears as ATC took them, which the fakes read (tests/fakes/fake_gears.py)
        om.write_text(json.dumps({"fake_om": atc_gear_options(contract.gears)}))
    else:
        write_om(om, OmPlan(list(contract.converted.inputs), list(contract.converted.outputs)))
    if onnx_path.resolve() != om.with_suffix(".onnx").resolve():
        shutil.copyfile(onnx_path, om.with_suffix(".onnx"))
    converted = replace(contract.converted, target="om", path="model.om", sha256=sha256_file(om),
                        soc_version="Ascend310", precision_mode="force_fp32")
    return replace(contract, path=folder / contract.path.name, converted=converted).save()


def atc_gear_options(gears: DynamicShape) -> dict[str, str]:
    """ATC's --input_shape (node names, -1 or lo~hi where a dim varies) and dynamic option for `gears`."""
    ranges = iter(gears.ranges)

    def dim(value: int | None) -> str:
        if value is not None:
            return str(value)
        if gears.kind != RANGE:
            return "-1"
        bound = next(ranges)
        return bound.text()

    options = {"input_shape": ";".join(f"{node_name(tensor)}:{','.join(dim(d) for d in shape)}"
                                       for tensor, shape in gears.inputs)}
    if gears.kind == BATCH:
        options["dynamic_batch_size"] = ",".join(str(g[0]) for g in gears.gears)
    elif gears.kind == IMAGE_SIZE:
        options["dynamic_image_size"] = ";".join(f"{g[0]},{g[1]}" for g in gears.gears)
    elif gears.kind == DIMS:
        options["dynamic_dims"] = ";".join(",".join(map(str, g)) for g in gears.gears)
    return options


def om_carrying(om: Path, onnx_model: bytes) -> Path:
    """`om` as the fake atc writes it with FAKE_ATC_COMPILE=onnx: an om carrying its ONNX model, which the fake msame
    and ais_bench run wherever it is copied (an Ascend host's working folder). The fakes' folder is on sys.path only
    while the format's header is read: left there, it would make the fake ais_bench importable by every later test."""
    sys.path.insert(0, str(FAKES))
    try:
        from fake_om import EMBEDDED
    finally:
        sys.path.remove(str(FAKES))
    om.write_bytes(EMBEDDED + onnx_model)
    return om


def two_input_model(folder: Path, target: Target) -> ModelContract:
    """a:0 float32 (2,3) and b:0 float16 (2,3) -> sum:0 = a + b (float32), half:0 = sum as float16.

    Two inputs (msame pairs their files by name) and a float16 output (read with the om's dtype), by onnx.helper.
    """
    import onnx
    from onnx import TensorProto, helper

    folder.mkdir(parents=True, exist_ok=True)
    graph = helper.make_graph(
        [helper.make_node("Cast", ["b:0"], ["b_float"], to=TensorProto.FLOAT),
         helper.make_node("Add", ["a:0", "b_float"], ["sum:0"]),
         helper.make_node("Cast", ["sum:0"], ["half:0"], to=TensorProto.FLOAT16)],
        "two_input",
        [helper.make_tensor_value_info("a:0", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("b:0", TensorProto.FLOAT16, [2, 3])],
        [helper.make_tensor_value_info("sum:0", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("half:0", TensorProto.FLOAT16, [2, 3])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(folder / "model.onnx"))
    inputs = (TensorSpec("a:0", "float32", (2, 3)), TensorSpec("b:0", "float16", (2, 3)))
    outputs = (TensorSpec("sum:0", "float32", (2, 3)), TensorSpec("half:0", "float16", (2, 3)))
    artefact = folder / ("model.om" if target == "om" else "model.onnx")
    if target == "om":  # a real om of these specs, which the fakes run as the model.onnx beside it
        write_om(artefact, OmPlan(list(inputs), list(outputs)))
    contract = ModelContract(
        path=folder / "model.json", pb="model.pb", pb_sha256="",
        source=SourceInfo(path="onnx.helper", kind="pb", tf_version="", frozen_with_tf=""),
        inputs=inputs, outputs=outputs,
        converted=ConvertedInfo(target=target, path=artefact.name, sha256=sha256_file(artefact), inputs=inputs,
                                outputs=outputs),
    )
    return contract.save()


def two_input_batches(count: int = 2, *, seed: int = 1) -> dict[str, list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    return {"a:0": [rng.standard_normal((2, 3)).astype(np.float32) for _ in range(count)],
            "b:0": [rng.standard_normal((2, 3)).astype(np.float16) for _ in range(count)]}


def use_fake_tools(monkeypatch: pytest.MonkeyPatch) -> None:
    """msame and `python -m ais_bench` resolve to the fakes; the fakes' `python3` is this interpreter."""
    path = os.pathsep.join([str(FAKES), str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    monkeypatch.setenv("PATH", path)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(FAKES), os.environ.get("PYTHONPATH")])))
    monkeypatch.delenv("FAKE_MSAME_FAIL", raising=False)
    monkeypatch.delenv("FAKE_MSAME_TIMESTAMP", raising=False)
    monkeypatch.delenv("FAKE_AIS_BENCH_FAIL", raising=False)


def hide_tools(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No msame on PATH, no ais_bench importable, no Ascend toolkit: a laptop."""
    empty = tmp_path / "empty-path"
    empty.mkdir(exist_ok=True)
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.delenv("PYTHONPATH", raising=False)
    monkeypatch.delenv("ASCEND_TOOLKIT_HOME", raising=False)
    monkeypatch.delenv("ASCEND_HOME", raising=False)


# A gear om of each kind for the fakes: its ATC options (fake_gears.py) and the shapes of a:0 and b:0, a dim
# named where a gear decides it.
GEAR_OMS: dict[str, tuple[dict[str, str], tuple[tuple[int | str, ...], tuple[int | str, ...]]]] = {
    "batch": ({"input_shape": "a:-1,3;b:-1,3", "dynamic_batch_size": "1,2,4"}, (("n", 3), ("n", 3))),
    "image_size": ({"input_shape": "a:1,-1,-1;b:1,-1,-1", "dynamic_image_size": "2,3;4,4"},
                   ((1, "h", "w"), (1, "h", "w"))),
    "dims": ({"input_shape": "a:2,-1;b:2,-1", "dynamic_dims": "3,3;5,5"}, ((2, "d"), (2, "e"))),
    "range": ({"input_shape": "a:1~4,3;b:1~4,3"}, (("n", 3), ("n", 3))),
}


def gear_om(folder: Path, kind: str) -> Path:
    """model.om (the fake's JSON om of GEAR_OMS[kind]) beside model.onnx: sum:0 = a + b (float32), half:0 = sum
    as float16, every varying dim a named ONNX dim."""
    import onnx
    from onnx import TensorProto, helper

    options, (shape_a, shape_b) = GEAR_OMS[kind]
    folder.mkdir(parents=True, exist_ok=True)
    graph = helper.make_graph(
        [helper.make_node("Cast", ["b:0"], ["b_float"], to=TensorProto.FLOAT),
         helper.make_node("Add", ["a:0", "b_float"], ["sum:0"]),
         helper.make_node("Cast", ["sum:0"], ["half:0"], to=TensorProto.FLOAT16)],
        f"gear_{kind}",
        [helper.make_tensor_value_info("a:0", TensorProto.FLOAT, list(shape_a)),
         helper.make_tensor_value_info("b:0", TensorProto.FLOAT16, list(shape_b))],
        [helper.make_tensor_value_info("sum:0", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("half:0", TensorProto.FLOAT16, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(folder / "model.onnx"))
    om = folder / "model.om"
    om.write_text(json.dumps({"fake_om": options}))
    return om


def gear_batches(shape: tuple[int, ...], count: int = 2, *, seed: int = 3) -> dict[str, list[np.ndarray]]:
    """Bins for a:0 (float32) and b:0 (float16) at one gear's shape."""
    rng = np.random.default_rng(seed)
    return {"a:0": [rng.standard_normal(shape).astype(np.float32) for _ in range(count)],
            "b:0": [rng.standard_normal(shape).astype(np.float16) for _ in range(count)]}
