"""Contracts made by hand for dump-bin's tests: multi-input, integer inputs, a converted model taking float16.

dump-bin reads only the contract (names, dtypes, shapes), never the graph, so the pb here is a stand-in file whose
sha256 the contract records truthfully.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from binio.spec import TensorSpec
from infer.contract import ConvertedInfo, ModelContract, SourceInfo


def hand_contract(folder: Path, inputs: tuple[TensorSpec, ...], *,
                  converted_inputs: tuple[TensorSpec, ...] | None = None) -> ModelContract:
    folder.mkdir(parents=True, exist_ok=True)
    pb = folder / "model.pb"
    pb.write_bytes(b"a frozen graph stand-in for dump-bin's tests")
    outputs = (TensorSpec("out:0", "float32", (inputs[0].shape[0], 1)),)
    converted = None
    if converted_inputs is not None:
        onnx = folder / "model.onnx"
        onnx.write_bytes(b"a converted model stand-in")
        digest = hashlib.sha256(onnx.read_bytes()).hexdigest()
        converted = ConvertedInfo(target="onnx", path="model.onnx", sha256=digest, inputs=converted_inputs,
                                  outputs=outputs)
    contract = ModelContract(
        path=folder / "model.json", pb="model.pb", pb_sha256=hashlib.sha256(pb.read_bytes()).hexdigest(),
        source=SourceInfo(path="hand", kind="pb", tf_version="", frozen_with_tf=""),
        inputs=inputs, outputs=outputs, converted=converted,
    )
    return contract.save()


def fp16_model(folder: Path) -> ModelContract:
    """images:0 float32 (2,8,8,3) in the pb; the converted model takes float16 there (--input-fp16-nodes)."""
    spec = TensorSpec("images:0", "float32", (2, 8, 8, 3), "NHWC")
    return hand_contract(folder, (spec,), converted_inputs=(spec.with_dtype("float16"),))


def two_input_model(folder: Path, *, batch: int = 2) -> ModelContract:
    """ids:0 int32 (B,4) and mask:0 float32 (B,4): a BERT-like pair."""
    ids = TensorSpec("ids:0", "int32", (batch, 4))
    return hand_contract(folder, (ids, TensorSpec("mask:0", "float32", (batch, 4))))
