"""model.json: written atomically, read back whole, and refused with a clear line when it cannot be trusted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from binio.binfile import sha256_file
from binio.gears import DynamicShape
from binio.spec import TensorSpec
from infer.contract import (
    SCHEMA,
    SCHEMA_VERSION,
    ContractError,
    ConvertedInfo,
    ModelContract,
    SourceInfo,
    load_contract,
)


def _contract(folder: Path) -> ModelContract:
    pb = folder / "model.pb"
    pb.write_bytes(b"graph bytes")
    return ModelContract(
        path=folder / "model.json", pb="model.pb", pb_sha256=sha256_file(pb),
        source=SourceInfo(path="/ckpt/model.ckpt", kind="checkpoint", tf_version="1.15.0", frozen_with_tf="2.21.0"),
        inputs=(TensorSpec("images:0", "float32", (2, 8, 8, 3), "NHWC"),),
        outputs=(TensorSpec("probs:0", "float32", (2, 5)),),
        fixed={"is_training": "false"},
    )


def test_round_trip(tmp_path: Path) -> None:
    saved = _contract(tmp_path).save()
    loaded = load_contract(tmp_path)  # a folder means its model.json
    assert loaded == saved
    assert json.loads((tmp_path / "model.json").read_text())["version"] == SCHEMA_VERSION
    loaded.check_pb_unchanged()
    assert not list(tmp_path.glob(".*.tmp"))


def test_round_trip_with_converted(tmp_path: Path) -> None:
    (tmp_path / "model.onnx").write_bytes(b"onnx")
    converted = ConvertedInfo(
        target="onnx", path="model.onnx", sha256=sha256_file(tmp_path / "model.onnx"),
        inputs=(TensorSpec("images:0", "float16", (2, 8, 8, 3), "NHWC"),),
        outputs=(TensorSpec("probs:0", "float32", (2, 5)),), command=("atc", "--framework=3"),
        settings={"opset": 13},
    )
    saved = _contract(tmp_path).with_converted(converted).save()
    loaded = load_contract(tmp_path / "model.json")
    assert loaded == saved
    assert loaded.model_inputs[0].dtype == "float16"
    loaded.check_converted_unchanged()
    assert loaded.gears is None


def test_round_trip_with_gears(tmp_path: Path) -> None:
    """A model converted with gears keeps them in model.json: which dims vary and the values they take."""
    (tmp_path / "model.onnx").write_bytes(b"onnx")
    gears = DynamicShape("batch", (("images:0", (None, 8, 8, 3)),), gears=((1,), (4,), (8,)))
    converted = ConvertedInfo(
        target="onnx", path="model.onnx", sha256=sha256_file(tmp_path / "model.onnx"),
        inputs=(TensorSpec("images:0", "float32", (None, 8, 8, 3), "NHWC"),),
        outputs=(TensorSpec("probs:0", "float32", (None, 5)),), gears=gears,
    )
    saved = _contract(tmp_path).with_converted(converted).save()
    document = json.loads((tmp_path / "model.json").read_text())
    assert document["converted"]["gears"]["varying"] == [{"tensor": "images:0", "axis": 0}]
    assert document["converted"]["gears"]["gears"] == [[1], [4], [8]]
    loaded = load_contract(tmp_path)
    assert loaded == saved
    assert loaded.gears == gears


def test_missing(tmp_path: Path) -> None:
    with pytest.raises(ContractError) as caught:
        load_contract(tmp_path / "model.json")
    assert str(caught.value) == f"{tmp_path / 'model.json'}: no such model contract"
    assert caught.value.hint == "infer freeze writes model.json"


def test_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "model.json"
    path.write_text('{"schema": "infer.model-contract",\n  "version": ')
    with pytest.raises(ContractError) as caught:
        load_contract(path)
    assert str(caught.value) == f"{path}: not valid JSON (line 2, column 14: Expecting value)"


def test_binary_model_file_given_for_the_contract(tmp_path: Path) -> None:
    """`infer convert model.pb` names the pb, not its contract: refused by name, pointing at the model.json."""
    pb = tmp_path / "model.pb"
    pb.write_bytes(b"\n\x0c\xa8\xff binary graph")
    with pytest.raises(ContractError) as caught:
        load_contract(pb)
    assert str(caught.value) == f"{pb}: not a model contract (binary, not JSON text)"
    assert caught.value.hint == "infer freeze writes model.json"
    _contract(tmp_path).save()  # rewrites model.pb as well: the contract now sits beside a (new) binary file
    pb.write_bytes(b"\xa8\xff")
    with pytest.raises(ContractError) as caught:
        load_contract(pb)
    assert caught.value.hint == f"give {tmp_path / 'model.json'}"


def test_binary_contract_does_not_point_at_itself(tmp_path: Path) -> None:
    contract = tmp_path / "model.json"
    contract.write_bytes(b"\xa8\xff")
    with pytest.raises(ContractError) as caught:
        load_contract(contract)
    assert str(caught.value) == f"{contract}: not a model contract (binary, not JSON text)"
    assert caught.value.hint == "infer freeze writes model.json"


@pytest.mark.parametrize("document", [{"schema": "something.else", "version": 1}, [1, 2], {"version": 1}])
def test_foreign(tmp_path: Path, document: object) -> None:
    path = tmp_path / "model.json"
    path.write_text(json.dumps(document))
    with pytest.raises(ContractError) as caught:
        load_contract(path)
    assert str(caught.value) == f"{path}: not an infer model contract (expected schema 'infer.model-contract')"


def test_newer_version(tmp_path: Path) -> None:
    document = _contract(tmp_path).to_json()
    document["version"] = SCHEMA_VERSION + 1
    path = tmp_path / "model.json"
    path.write_text(json.dumps(document))
    with pytest.raises(ContractError) as caught:
        load_contract(path)
    assert str(caught.value) == f"{path}: contract version {SCHEMA_VERSION + 1} is newer than this infer reads " \
                                f"(up to {SCHEMA_VERSION})"
    assert caught.value.hint == "upgrade infer"


def test_missing_field(tmp_path: Path) -> None:
    document = _contract(tmp_path).to_json()
    del document["frozen"]
    path = tmp_path / "model.json"
    path.write_text(json.dumps({**document, "schema": SCHEMA}))
    with pytest.raises(ContractError) as caught:
        load_contract(path)
    assert str(caught.value) == f"{path}: missing field 'frozen'"


def test_empty_outputs(tmp_path: Path) -> None:
    document = _contract(tmp_path).to_json()
    document["outputs"] = []
    path = tmp_path / "model.json"
    path.write_text(json.dumps(document))
    with pytest.raises(ContractError) as caught:
        load_contract(path)
    assert str(caught.value) == f"{path}: outputs: expected a non-empty list of tensors, found an empty one"


def test_changed_pb_is_refused(tmp_path: Path) -> None:
    contract = _contract(tmp_path).save()
    contract.pb_path.write_bytes(b"other bytes")
    with pytest.raises(ContractError) as caught:
        contract.check_pb_unchanged()
    assert str(caught.value) == f"{contract.path}: model.pb changed since freeze (sha256 differs from the contract's)"
    contract.pb_path.unlink()
    with pytest.raises(ContractError, match=r"its frozen graph .* is missing"):
        contract.check_pb_unchanged()


def test_input_lookup(tmp_path: Path) -> None:
    contract = _contract(tmp_path)
    assert contract.input("images") is contract.inputs[0]
    with pytest.raises(ContractError) as caught:
        contract.input("pixels")
    assert str(caught.value) == f"{contract.path}: no input named 'pixels'; inputs are: images:0"


def test_version_missing_is_not_called_newer(tmp_path: Path) -> None:
    document = _contract(tmp_path).to_json()
    del document["version"]
    path = tmp_path / "model.json"
    path.write_text(json.dumps(document))
    with pytest.raises(ContractError) as caught:
        load_contract(path)
    assert str(caught.value) == f"{path}: contract has no integer 'version' (found None)"
