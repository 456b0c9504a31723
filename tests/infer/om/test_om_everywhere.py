"""Everywhere an om is used, its own descriptors decide: run on msame checks the bins against the om's inputs and
reads outputs with its dtypes, dump-bin writes the om's input dtype, and a contract that recorded the om without
them has the om read where it is used. An om that cannot be read keeps model.json's specs, with a warning."""

from __future__ import annotations

import logging
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from binio.binfile import sha256_file
from binio.manifest import load_manifest
from infer.contract import ModelContract, load_contract
from infer.convert import ConvertOptions, convert_model
from infer.model_om import om_descriptors, with_om_descriptors
from infer.run._runners.msame import MsameRunner
from tests.builders.bins import write_dataset
from tests.cli import run_cli
from tests.infer.om_files import OmPlan, write_om
from tests.infer.run_data import as_om, cnn_batches, use_fake_tools


def _om_beside_the_onnx(onnx_small_cnn: ModelContract, folder: Path, **plan: Any) -> ModelContract:
    """A copy of the stand-in's folder with a real om (the writer's) recorded by --use-om as model.om: the fake
    msame runs the model.onnx beside it, infer reads the om's own descriptors."""
    shutil.copytree(onnx_small_cnn.folder, folder)
    contract = load_contract(folder / "model.json")
    om = write_om(folder / "model.om", OmPlan(list(contract.inputs), list(contract.outputs), **plan))
    return convert_model(replace(contract, converted=None).save(), ConvertOptions(use_om=om)).contract


def test_msame_is_refused_float32_bins_for_the_oms_float16_input(onnx_small_cnn: ModelContract, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    use_fake_tools(monkeypatch)
    contract = _om_beside_the_onnx(onnx_small_cnn, tmp_path / "model", input_dtypes={"images:0": "float16"})
    write_dataset(tmp_path / "bins", {"images:0": cnn_batches(2)}, layout="NHWC")
    outcome = run_cli(capsys, "run", contract.path, "--input", tmp_path / "bins", "-o", tmp_path / "runs")
    assert outcome.code == 2
    assert outcome.error_line == (f"error: {tmp_path / 'bins' / 'images'}: bins are float32, model.om takes float16 "
                                  "for input images:0 (its own input descriptor)")
    assert not (tmp_path / "runs").exists()


def test_msame_is_refused_a_batch_the_om_was_not_built_for(onnx_small_cnn: ModelContract, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    use_fake_tools(monkeypatch)
    contract = _om_beside_the_onnx(onnx_small_cnn, tmp_path / "model")
    write_dataset(tmp_path / "bins", {"images:0": cnn_batches(2, batch=4)}, layout="NHWC")
    outcome = run_cli(capsys, "run", contract.path, "--input", tmp_path / "bins", "-o", tmp_path / "runs")
    assert outcome.error_line == (f"error: {tmp_path / 'bins' / 'images'}: bins hold batches of 4, model.om takes "
                                  "batch 2 for input images:0 (2,8,8,3) (its own input descriptor)")


def test_dump_bin_writes_the_oms_input_dtype(onnx_small_cnn: ModelContract, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    contract = _om_beside_the_onnx(onnx_small_cnn, tmp_path / "model", input_dtypes={"images:0": "float16"})
    np.save(tmp_path / "images.npy", np.concatenate(cnn_batches(2)))
    outcome = run_cli(capsys, "dump-bin", "-m", contract.path, "-o", tmp_path / "bins", tmp_path / "images.npy")
    assert outcome.code == 0, outcome.err
    assert load_manifest(tmp_path / "bins").inputs[0].dtype == "float16"


@pytest.mark.slow
def test_an_om_run_by_msame_is_compared_as_the_om_on_its_chip(onnx_small_cnn: ModelContract, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    use_fake_tools(monkeypatch)
    contract = _om_beside_the_onnx(onnx_small_cnn, tmp_path / "model")
    write_dataset(tmp_path / "bins", {"images:0": cnn_batches(2)}, layout="NHWC")
    run = run_cli(capsys, "run", contract.path, "--input", tmp_path / "bins", "-o", tmp_path / "runs")
    assert run.code == 0, run.err
    outcome = run_cli(capsys, "compare", contract.path, "--input", tmp_path / "bins", "--actual", tmp_path / "runs",
                      "--no-expected-from-emulation")
    assert outcome.code == 0, outcome.err
    assert contract.converted is not None
    assert (f"| actual: msame model.om on Ascend310 (from the om) force_fp16 ({contract.converted.sha256[:8]}) |"
            in outcome.verdict)
    # the stand-in computed in fp32 here: its outputs are not on the fp16 grid, and the line does not say they are
    assert "fp16 grid" not in outcome.out


def test_a_contract_that_recorded_the_om_without_its_descriptors_has_it_read(
        onnx_small_cnn: ModelContract, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    contract = _om_beside_the_onnx(onnx_small_cnn, tmp_path / "model", input_dtypes={"images:0": "float16"},
                                   input_order=[])
    assert contract.converted is not None
    settings = {k: v for k, v in contract.converted.settings.items() if k != "om"}
    older = replace(contract, converted=replace(contract.converted, inputs=contract.inputs, settings=settings)).save()
    with caplog.at_level(logging.WARNING):
        fresh = with_om_descriptors(load_contract(older.path))
    assert fresh.model_inputs[0].dtype == "float16"
    assert "images:0 is images:0 float16(2,8,8,3) in the om itself, images:0 float32(2,8,8,3) in model.json" \
        in caplog.text
    assert load_contract(older.path).model_inputs[0].dtype == "float32"  # model.json itself is not rewritten
    assert MsameRunner.from_contract(load_contract(older.path)).inputs[0].dtype == "float16"


def test_a_file_that_is_not_an_om_keeps_model_jsons_specs_with_a_warning(
        onnx_small_cnn: ModelContract, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    fake = as_om(onnx_small_cnn, tmp_path / "model")
    assert fake.converted is not None
    om = fake.folder / fake.converted.path
    om.write_bytes(b"not an om: text, which the fake tools still run as the onnx beside it\n")
    fake = fake.with_converted(replace(fake.converted, sha256=sha256_file(om))).save()
    with caplog.at_level(logging.WARNING):
        assert om_descriptors(fake) is None
    assert f"{om}: not an om file: expected the magic b'IMOD'" in caplog.text
    assert with_om_descriptors(fake) == fake
    assert MsameRunner.from_contract(fake).inputs == fake.model_inputs


def test_the_om_atc_wrote_is_read_back_into_the_record(frozen_small_cnn: ModelContract, tmp_path: Path) -> None:
    from infer.contract import ConvertedInfo
    from infer.convert._om_record import with_om_record

    shutil.copytree(frozen_small_cnn.folder, tmp_path / "model")
    contract = load_contract(tmp_path / "model" / "model.json")
    om = write_om(contract.folder / "model.om", OmPlan(list(contract.inputs), list(contract.outputs),
                                                       output_dtypes={"probs:0": "float16"}))
    predicted = ConvertedInfo(target="om", path="model.om", sha256=sha256_file(om), inputs=contract.inputs,
                              outputs=contract.outputs, soc_version="Ascend310")
    recorded = with_om_record(contract, predicted)
    assert [s.dtype for s in recorded.outputs] == ["float16"]
    assert recorded.settings["om"]["outputs"][0]["dtype"] == "float16"
    (contract.folder / "fake.om").write_bytes(b"fake om for Ascend310")
    assert with_om_record(contract, replace(predicted, path="fake.om")) == replace(predicted, path="fake.om")


def test_an_om_that_does_not_decode_is_said_once_and_the_run_takes_model_jsons_specs(
        onnx_small_cnn: ModelContract, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The toolkit's reader may not follow every om CANN loads: where it cannot, run and compare go on with what
    model.json says (a warning names why), rather than refuse an om msame would run."""
    contract = _om_beside_the_onnx(onnx_small_cnn, tmp_path / "model")
    assert contract.converted is not None
    om = contract.folder / contract.converted.path
    from atc_wrap.ascend_files.om_file import MODEL_DEF, read_om_file

    model_def = read_om_file(om).partition(MODEL_DEF)
    assert model_def is not None
    whole = bytearray(om.read_bytes())
    whole[model_def.offset:model_def.offset + model_def.size] = b"\xff" * model_def.size  # garbled, same length
    om.write_bytes(bytes(whole))
    settings = {k: v for k, v in contract.converted.settings.items() if k != "om"}
    garbled = replace(contract, converted=replace(contract.converted, sha256=sha256_file(om),
                                                  settings=settings)).save()
    with caplog.at_level(logging.WARNING):
        assert om_descriptors(garbled) is None
        assert MsameRunner.from_contract(garbled).inputs == garbled.model_inputs
    assert f"{om}: its MODEL_DEF partition is not a GE ModelDef" in caplog.text
