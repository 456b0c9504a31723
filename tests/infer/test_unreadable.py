"""Files infer may not read (permission denied): one line naming the file, in every stage, never a traceback.

Tests run as root here, whose CAP_DAC_OVERRIDE reads any file; each command runs in a child process whose
bounding set lacks CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH, so the kernel checks the file's mode as it would for
a plain user.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from infer.contract import ModelContract
from tests.builders.bins import write_dataset
from tests.cli import run_cli
from tests.infer.run_data import cnn_batches

REPO = Path(__file__).resolve().parents[2]
_PR_CAPBSET_DROP = 24
_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH = 1, 2


def _drop_file_capabilities() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH):
        if libc.prctl(_PR_CAPBSET_DROP, capability, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def _can_drop() -> bool:
    if os.geteuid() != 0:
        return True  # a plain user is checked by the kernel anyway
    try:
        probe = subprocess.run([sys.executable, "-c", "print(1)"], preexec_fn=_drop_file_capabilities,
                               capture_output=True, timeout=60)
    except OSError:
        return False
    return probe.returncode == 0


pytestmark = pytest.mark.skipif(not _can_drop(), reason="cannot drop CAP_DAC_OVERRIDE here (no CAP_SETPCAP)")


def infer_as_plain_user(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "infer", *map(str, args)], capture_output=True, text=True,
                          cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                          preexec_fn=_drop_file_capabilities if os.geteuid() == 0 else None, timeout=300)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, onnx_small_cnn: ModelContract) -> Path:
    """A model folder (pb + onnx), a dataset, a run of it and an npy source, ready to be made unreadable."""
    import pytest as _pytest

    root = tmp_path_factory.mktemp("unreadable")
    shutil.copytree(onnx_small_cnn.folder, root / "model")
    write_dataset(root / "bins", {"images:0": cnn_batches(2)}, layout="NHWC")
    np.save(root / "data.npy", np.zeros((3, 8, 8, 3), np.float32))
    capsys = None
    del capsys, _pytest
    from infer.run import run_model

    run_model(root / "model" / "model.json", root / "bins", root / "out")
    return root


def _run_folder(root: Path) -> Path:
    (folder,) = (root / "out").iterdir()
    return folder


CASES: dict[str, tuple[Callable[[Path], Path], Callable[[Path, Path], tuple[object, ...]]]] = {
    "convert: model.pb": (lambda r: r / "model" / "model.pb",
                          lambda r, o: ("convert", r / "model" / "model.json", "--target", "onnx")),
    "dump-bin: the source": (lambda r: r / "data.npy",
                             lambda r, o: ("dump-bin", "-m", r / "model" / "model.json", "-o", o, r / "data.npy")),
    "dump-bin: model.pb": (lambda r: r / "model" / "model.pb",
                           lambda r, o: ("dump-bin", "-m", r / "model" / "model.json", "-o", o, r / "data.npy")),
    "run: model.onnx": (lambda r: r / "model" / "model.onnx",
                        lambda r, o: ("run", r / "model" / "model.json", "--input", r / "bins", "-o", o)),
    "run: a bin": (lambda r: r / "bins" / "images" / "000001.bin",
                   lambda r, o: ("run", r / "model" / "model.json", "--input", r / "bins", "-o", o)),
    "run: model.json": (lambda r: r / "model" / "model.json",
                        lambda r, o: ("run", r / "model" / "model.json", "--input", r / "bins", "-o", o)),
    "bin-info: a bin of a dataset": (lambda r: r / "bins" / "images" / "000000.bin",
                                     lambda r, o: ("bin-info", r / "bins")),
    "bin-info: a bare bin": (lambda r: r / "bins" / "images" / "000000.bin",
                             lambda r, o: ("bin-info", r / "bins" / "images" / "000000.bin")),
    "compare: an output": (lambda r: _run_folder(r) / "000000_output_0.bin",
                           lambda r, o: ("compare", r / "model" / "model.json", "--input", r / "bins", "--actual",
                                         _run_folder(r), "--golden", _run_folder(r), "--allow-same-backend")),
    "compare: run.json": (lambda r: _run_folder(r) / "run.json",
                          lambda r, o: ("compare", r / "model" / "model.json", "--input", r / "bins", "--actual",
                                        _run_folder(r), "--golden", _run_folder(r), "--allow-same-backend")),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CASES))
def test_an_unreadable_file_is_one_line_naming_it(world: Path, tmp_path: Path, case: str) -> None:
    locate, command = CASES[case]
    target = locate(world)
    mode = target.stat().st_mode
    target.chmod(0)
    try:
        result = infer_as_plain_user(*command(world, tmp_path / "new-out"))
    finally:
        target.chmod(mode)
    assert "Traceback" not in result.stderr, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert result.returncode == 2 and len(errors) == 1, result.stderr
    assert errors[0].startswith(f"error: {target}: ") and "permission denied" in errors[0].lower(), errors[0]


def test_the_fixture_runs_in_process_too(world: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The same commands succeed when the files are readable (so the refusals above are about the mode)."""
    assert run_cli(capsys, "bin-info", world / "bins").code == 0
