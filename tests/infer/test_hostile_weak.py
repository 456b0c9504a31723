"""Hostile input, round three, where a promise was kept only in part: FIFOs read where a document was expected,
limits no comparison can meet, fields read and then ignored, options silently dropped, pipeline paths that leave
the pipeline's folder. Each is refused by name now, exit code 2."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from infer.contract import ModelContract
from tests.cli import run_cli
from tests.hostile import fifo_at
from tests.infer.hostile_world import World, build_world


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, onnx_small_cnn: ModelContract) -> World:
    return build_world(tmp_path_factory.mktemp("hostile-weak"), onnx_small_cnn)


@pytest.fixture
def mine(world: World, tmp_path: Path) -> World:
    return world.copy(tmp_path / "world")


def _edit(path: Path, change: Callable[[Any], None]) -> None:
    document = json.loads(path.read_text())
    change(document)
    path.write_text(json.dumps(document))


# --- FIFOs: refused by name before they are opened ----------------------------------------------------------------

def _fifo_line(path: Path, what: str) -> str:
    return (f"error: {path}: a FIFO (named pipe), not a regular file; expected {what} (reading it could wait "
            "forever)")


@pytest.mark.parametrize(("flag", "what", "extra"), [
    ("--aipp-config", "an AIPP config", ()),
    ("--keep-dtype", "a keep_dtype file", ("--precision-mode", "force_fp16")),
    ("--customize-dtypes", "a customize_dtypes file", ("--precision-mode", "force_fp16")),
])
def test_a_fifo_given_to_convert(mine: World, flag: str, what: str, extra: tuple[str, ...],
                                 capsys: pytest.CaptureFixture[str]) -> None:
    with fifo_at(mine.root / "control.cfg") as pipe:
        result = run_cli(capsys, "convert", mine.model, "--target", "onnx", flag, pipe, *extra)
    assert (result.code, result.error_line) == (2, _fifo_line(pipe, what))


def test_a_fifo_as_the_pipeline_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with fifo_at(tmp_path / "pipeline.toml") as pipe:
        result = run_cli(capsys, "pipeline", "run", pipe)
    assert (result.code, result.error_line) == (2, _fifo_line(pipe, "a pipeline .toml file"))


@pytest.mark.parametrize(("table", "key"), [("compare", "labels"), ("convert", "keep_dtype")])
def test_a_fifo_named_by_the_pipeline_file_is_named_not_called_missing(mine: World, table: str, key: str,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    path = mine.root / "pipeline.toml"
    path.write_text(f'[model]\nsource = "{mine.model.parent / "model.pb"}"\noutputs = ["probs:0"]\n'
                    f'[data]\nsource = "random:0"\n[{table}]\n{key} = "named.txt"\n')
    with fifo_at(mine.root / "named.txt") as pipe:
        result = run_cli(capsys, "pipeline", "run", path)
    assert (result.code, result.error_line) == (2, f"error: {path}: [{table}] {key}: {pipe} is a FIFO (named pipe), "
                                                   "not a regular file (reading it could wait forever)")


def test_a_fifo_as_the_labels_file_is_named_not_called_missing(mine: World, capsys: pytest.CaptureFixture[str]) -> None:
    with fifo_at(mine.labels) as pipe:
        result = run_cli(capsys, *mine.compare("--labels", pipe))
    assert (result.code, result.error_line) == (2, _fifo_line(pipe, "a labels file"))


def test_a_fifo_in_place_of_run_json_is_not_ignored(mine: World, capsys: pytest.CaptureFixture[str]) -> None:
    with fifo_at(mine.run_json) as pipe:
        result = run_cli(capsys, *mine.compare())
    assert (result.code, result.error_line) == (2, _fifo_line(pipe, "a run record"))


# --- limits that can never be met ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("given", "message"), [
    (("--threshold", "cosine=1e400"), "--threshold 'cosine=1e400': expected a limit from -1 to 1 (the values "
                                      "CosineSimilarity takes), found 1e400"),
    (("--threshold", "allclose=150"), "--threshold 'allclose=150': expected a limit from 0 to 1 (the values "
                                      "AllclosePassRate takes), found 150"),
    (("--threshold", "red=-1"), "--threshold 'red=-1': expected a finite limit of 0 or more (the values "
                                "RelativeEuclideanDistance takes), found -1"),
    (("--threshold", ":cosine=1"), "--threshold ':cosine=1': no output name before ':' (expected "
                                   "output:metric=value, or metric=value for every output)"),
    (("--topk", "999"), "--topk 999: output probs:0 has 5 classes; expected 1 to 5"),
], ids=["cosine=1e400", "allclose=150", "red=-1", ":cosine=1", "topk 999"])
def test_a_limit_that_cannot_be_met_is_refused_with_its_range(world: World, given: tuple[str, ...], message: str,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(capsys, *world.compare(*given))
    assert (result.code, result.error_line) == (2, f"error: {message}")


def test_topk_left_out_is_five_or_the_class_count(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(capsys, *world.compare("--topk", "5")).code == 0
    assert run_cli(capsys, *world.compare()).code == 0


# --- fields that are read are honoured or refused -----------------------------------------------------------------

@pytest.mark.parametrize(("change", "entry", "expected"), [
    (lambda d: d["inputs"][0].__setitem__("byte_order", "big"), "inputs[0].byte_order",
     "expected 'little' (bins are read little-endian, as msame and ais_bench read them), found 'big'"),
    (lambda d: d["inputs"][0].__setitem__("layout", "HWCN"), "inputs[0].layout",
     "expected one of NHWC, NCHW, ND, found 'HWCN'"),
    (lambda d: d.__setitem__("batch", 4), "inputs[0].shape", "(2,8,8,3) does not start with the dataset's batch 4"),
    (lambda d: d["inputs"][0]["files"][1].__setitem__("rows", 3), "inputs[0].files[1].rows",
     "3 real samples in a batch of 2"),
], ids=["byte_order", "layout", "batch", "rows"])
def test_a_dataset_field_that_disagrees_is_refused(mine: World, change: Callable[[Any], None], entry: str,
                                                   expected: str, capsys: pytest.CaptureFixture[str]) -> None:
    _edit(mine.manifest, change)
    result = run_cli(capsys, "run", mine.model, "--input", mine.bins, "-o", mine.root / "out")
    assert (result.code, result.error_line) == (2, f"error: {mine.manifest}: {entry}: {expected}")
    assert not (mine.root / "out").exists()


def test_bins_of_another_layout_than_the_models_input_are_refused(mine: World,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    _edit(mine.manifest, lambda d: d["inputs"][0].__setitem__("layout", "NCHW"))
    result = run_cli(capsys, "run", mine.model, "--input", mine.bins, "-o", mine.root / "out")
    assert (result.code, result.error_line) == (2, f"error: {mine.bins / 'images'}: bins are NCHW ({mine.manifest}), "
                                                   "the model's input images:0 takes NHWC")


@pytest.mark.parametrize(("key", "value", "said"), [("shape", [2, 6], "float32(2,6)"),
                                                    ("dtype", "float16", "float16(2,5)")])
def test_a_contract_output_the_model_does_not_return_is_refused(mine: World, key: str, value: Any, said: str,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    def change(document: dict[str, Any]) -> None:
        for section in (document, document["converted"]):
            section["outputs"][0][key] = value

    _edit(mine.model, change)
    result = run_cli(capsys, "run", mine.model, "--input", mine.bins, "-o", mine.root / "out")
    onnx = mine.model.parent / "model.onnx"
    assert (result.code, result.error_line) == (2, f"error: {onnx}: output probs:0 is float32(2,5), its contract "
                                                   f"(model.json) says {said}")


@pytest.mark.parametrize(("change", "expected"), [
    (lambda d: d.__setitem__("backend", "onnxrt-gpu"),
     "backend: expected one of onnxrt, tf, msame, ais_bench, found 'onnxrt-gpu'"),
    (lambda d: d["model"].__setitem__("sha256", "not a digest"),
     "model.sha256: expected 64 hex digits (the sha256 of the model run), found 'not a digest'"),
    (lambda d: d.__setitem__("stems", ["000000"]) or d.__setitem__("rows", [2]),
     "batch 000001: not listed in run.json, 1 rows in {manifest}"),
    (lambda d: d.__setitem__("rows", [2, 2]), "batch 000001: 2 rows in run.json, 1 rows in {manifest}"),
    (lambda d: d.__setitem__("stems", ["000000", "000007"]), "batch 000001: not listed in run.json, 1 rows in "
                                                             "{manifest}"),
], ids=["backend", "sha256", "a stem missing", "rows", "a stem of another dataset"])
def test_a_run_json_field_that_disagrees_is_refused(mine: World, change: Callable[[Any], None], expected: str,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    _edit(mine.run_json, change)
    result = run_cli(capsys, *mine.compare())
    assert (result.code, result.error_line) == (2, f"error: {mine.run_json}: "
                                                   f"{expected.format(manifest=mine.manifest)}")


def test_outputs_of_another_model_are_refused(mine: World, capsys: pytest.CaptureFixture[str]) -> None:
    _edit(mine.run_json, lambda d: d["model"].__setitem__("sha256", "ab" * 32))
    result = run_cli(capsys, *mine.compare())
    assert result.code == 2
    assert result.error_line.startswith(f"error: {mine.run_json}: model.sha256 abababababab... is not a model of "
                                        f"{mine.model} (frozen pb ")
    assert result.error_line.endswith("): the --actual outputs are of another model")


# --- options silently ignored -------------------------------------------------------------------------------------

def test_image_preprocessing_on_an_array_is_refused(mine: World, capsys: pytest.CaptureFixture[str]) -> None:
    array = mine.root / "data.npy"
    np.save(array, np.zeros((3, 8, 8, 3), np.float32))
    result = run_cli(capsys, "dump-bin", "-m", mine.model, "-o", mine.root / "new-bins", array, "--scale", "0.5",
                     "--mean", "1,2,3")
    assert (result.code, result.error_line) == (2, f"error: --scale 0.5, --mean 1,2,3: image preprocessing applies "
                                                   f"to a folder of images only; the source {array} is an array, "
                                                   "whose values are written as they are")
    assert run_cli(capsys, "dump-bin", "-m", mine.model, "-o", mine.root / "new-bins", array).code == 0


def test_data_preprocessing_on_an_array_in_the_pipeline_is_refused(mine: World,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    np.save(mine.root / "data.npy", np.zeros((3, 8, 8, 3), np.float32))
    path = mine.root / "pipeline.toml"
    path.write_text(f'[model]\nsource = "{mine.model.parent / "model.pb"}"\noutputs = ["probs:0"]\n'
                    '[data]\nsource = "data.npy"\n[data.preprocessing]\nscale = 0.5\n')
    result = run_cli(capsys, "pipeline", "run", path)
    assert (result.code, result.error_line) == (2, f"error: {path}: [data.preprocessing]: applies to a folder of "
                                                   "images only; [data] source 'data.npy' is not one, and its values "
                                                   "are written as they are")


def test_the_ais_bench_probe_keeps_to_the_runs_timeout(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from infer.run._runners import ais_bench
    from infer.run._runners.ais_bench import AisBenchRunner

    asked: list[float] = []

    def probe(argv: list[str], *, timeout: float, **kwargs: object) -> Any:
        asked.append(timeout)
        raise ais_bench.RunnerError("probe stopped here")

    monkeypatch.setattr(ais_bench, "run_tool", probe)
    runner = AisBenchRunner(tmp_path / "model.om", (), (), timeout=7.0)
    with pytest.raises(ais_bench.RunnerError):
        runner.find()
    assert asked == [7.0]


def test_an_atc_error_line_fails_the_conversion_even_beside_its_success_line(tmp_path: Path) -> None:
    from atc_wrap.atc.run import judge_output
    from atc_wrap.errors import ConvertError
    from binio.process import ToolResult

    om = tmp_path / "model.om"
    om.write_bytes(b"an om")
    error = "[ERROR] GE(1234,atc):2024-01-01-00:00:00.000.000 [graph_builder.cc:55]1234 a pass failed"
    lines = ("ATC start working now, please wait for a moment.", error, "ATC run success, welcome to the next use.")
    result = ToolResult(argv=("atc",), returncode=0, output="\n".join(lines), seconds=1.0)
    with pytest.raises(ConvertError) as refused:
        judge_output(result, om)
    assert refused.value.message == f"atc printed an error (and 'ATC run success'): {error}"


# --- pipeline paths stay inside the pipeline's folder ---------------------------------------------------------------

@pytest.mark.parametrize(("table", "key", "value"), [
    ("paths", "work_dir", "../../x"),
    ("convert", "aipp_config", "../../../etc/ssh/ssh_host_rsa_key.pub"),
    ("compare", "labels", "sub/../../labels.txt"),
    ("data", "source", "../data.npy"),
])
def test_a_relative_path_that_leaves_the_pipeline_folder_is_refused(tmp_path: Path, table: str, key: str, value: str,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    tables = {"model": {"source": "model.pb", "outputs": '["probs:0"]'}, "data": {"source": "random:0"},
              table: {key: value}}
    folder = tmp_path / "project"
    folder.mkdir()
    path = folder / "pipeline.toml"
    path.write_text("".join(f"[{name}]\n" + "".join(f"{k} = {v if v.startswith('[') else json.dumps(v)}\n"
                                                   for k, v in keys.items()) for name, keys in tables.items()))
    result = run_cli(capsys, "pipeline", "run", path)
    assert (result.code, result.error_line) == (2, f"error: {path}: [{table}] {key}: {value!r}: '..' leaves the "
                                                   f"pipeline file's folder {folder}")
    assert not (tmp_path / "x").exists()


def test_an_absolute_path_in_the_pipeline_file_is_taken_as_written(tmp_path: Path) -> None:
    from infer.pipeline.config import load_config

    elsewhere = tmp_path / "shared" / "labels.txt"
    folder = tmp_path / "project"
    folder.mkdir()
    path = folder / "pipeline.toml"
    path.write_text(f'[model]\nsource = "model.pb"\noutputs = ["probs:0"]\n[data]\nsource = "random:0"\n'
                    f'[compare]\nlabels = "{elsewhere}"\n[paths]\nwork_dir = "{tmp_path / "work"}"\n')
    config = load_config(path, check=False)
    assert (config.labels, config.work_dir) == (elsewhere, tmp_path / "work")
