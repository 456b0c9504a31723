"""One line where a traceback or a hang remained: shapes whose bytes exceed memory (refused before allocating),
FIFOs and devices given as files, paths that are not UTF-8."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from infer.contract import ModelContract
from tests.builders.bins import write_dataset
from tests.cli import run_cli
from tests.infer.run_data import cnn_batches
from tests.models import BuiltModel


def _needs_more_than_this_machine(nbytes: int) -> None:
    from binio.memory import available_memory

    available = available_memory()
    if available is not None and available >= nbytes:
        pytest.skip(f"this machine has {available} bytes available, the shape needs {nbytes}")


def _with_input_shape(contract: ModelContract, folder: Path, shape: list[int | None]) -> Path:
    shutil.copytree(contract.folder, folder)
    path = folder / contract.path.name
    document = json.loads(path.read_text())
    for section in (document, document.get("converted") or {}):
        for spec in section.get("inputs", []):
            spec["shape"] = shape
    path.write_text(json.dumps(document))
    return path


def test_freeze_with_a_batch_beyond_memory_is_refused_before_allocating(
        small_cnn: BuiltModel, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _needs_more_than_this_machine(100_000_000 * 8 * 8 * 3 * 12)
    result = run_cli(capsys, "freeze", small_cnn.prefix, "-o", tmp_path / "model", "--outputs", "probs:0",
                     "--batch", "100000000")
    assert result.code == 2
    line = result.error_line
    # what the verification holds: the seeded inputs, the conv's output (its largest tensor), the outputs compared
    assert line.startswith("error: verifying the frozen graph on seeded inputs images:0 float32(100000000,8,8,3) "
                           "(its largest tensor 102,400,000,000 bytes): needs 420.2 GiB, ")
    assert line.endswith(" of memory available")
    assert not (tmp_path / "model" / "model.pb").exists()


def test_dump_bin_with_a_batch_beyond_memory_is_refused_before_allocating(
        frozen_small_cnn: ModelContract, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _needs_more_than_this_machine(4 * 1_000_000_000 * 8 * 8 * 3 * 4)
    model = _with_input_shape(frozen_small_cnn, tmp_path / "model", [None, 8, 8, 3])
    np.save(tmp_path / "data.npy", np.zeros((3, 8, 8, 3), np.float32))
    result = run_cli(capsys, "dump-bin", "-m", model, "-o", tmp_path / "bins", tmp_path / "data.npy",
                     "--batch", "1000000000")
    assert result.code == 2
    assert result.error_line.startswith("error: dump-bin with batch 1000000000: 4 batch buffers per input "
                                        "(images:0 (1000000000,8,8,3) float32): needs 2.8 TiB, ")
    assert not (tmp_path / "bins").exists()


def test_a_contract_with_a_dim_of_a_trillion(frozen_small_cnn: ModelContract, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    model = _with_input_shape(frozen_small_cnn, tmp_path / "model", [2, 1_000_000_000_000, 8, 3])
    convert = run_cli(capsys, "convert", model, "--target", "onnx")
    assert convert.code == 2
    assert convert.error_line.startswith(f"error: {model}: one batch of the inputs images:0 "
                                         f"float32(2,1000000000000,8,3): needs 174.6 TiB, ")
    np.save(tmp_path / "data.npy", np.zeros((3, 8, 8, 3), np.float32))
    dump = run_cli(capsys, "dump-bin", "-m", model, "-o", tmp_path / "bins", tmp_path / "data.npy")
    assert dump.code == 2 and "needs 698.5 TiB" in dump.error_line


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "data.npy"
    os.mkfifo(path)
    return path


def test_a_fifo_as_a_source_is_refused_not_waited_on(frozen_small_cnn: ModelContract, fifo: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(capsys, "dump-bin", "-m", frozen_small_cnn.path, "-o", tmp_path / "bins", fifo)
    assert result.error_line == (f"error: {fifo}: a FIFO (named pipe), not a regular file; expected a .npy, .npz "
                                 f"or a folder (reading it could wait forever)")


def test_a_device_as_a_source_is_refused(frozen_small_cnn: ModelContract, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(capsys, "dump-bin", "-m", frozen_small_cnn.path, "-o", tmp_path / "bins", "/dev/zero")
    assert result.error_line.startswith("error: /dev/zero: a character device, not a regular file")


@pytest.mark.parametrize("document", ["model.json", "dataset.json"])
def test_a_fifo_where_a_document_is_expected(onnx_small_cnn: ModelContract, tmp_path: Path, document: str,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copytree(onnx_small_cnn.folder, tmp_path / "model")
    write_dataset(tmp_path / "bins", {"images:0": cnn_batches(2)}, layout="NHWC")
    target = tmp_path / "model" / "model.json" if document == "model.json" else tmp_path / "bins" / "dataset.json"
    target.unlink()
    os.mkfifo(target)
    result = run_cli(capsys, "run", tmp_path / "model" / "model.json", "--input", tmp_path / "bins", "-o",
                     tmp_path / "out")
    assert result.error_line.startswith(f"error: {target}: a FIFO (named pipe), not a regular file")


def test_a_path_that_is_not_utf8_is_named_not_called_a_corrupt_checkpoint(
        small_cnn: BuiltModel, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = Path(os.fsdecode(bytes(tmp_path) + b"/ckpt\xff"))
    shutil.copytree(small_cnn.prefix.parent, folder)
    prefix = folder / small_cnn.prefix.name
    result = run_cli(capsys, "freeze", prefix, "-o", tmp_path / "model", "--outputs", "probs:0")
    assert result.code == 2
    assert result.error_line == (f"error: {tmp_path}/ckpt\\xff/{small_cnn.prefix.name}: not valid UTF-8; infer, "
                                 f"TensorFlow and the JSON files it writes take UTF-8 paths only")
