"""Writers on a shared server: --force never acts through a link out of the output folder, one writer per folder,
a failed write removes only what it created, and files get the mode the umask gives."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from binio.manifest import load_manifest
from infer.contract import ModelContract
from tests.builders.bins import write_dataset
from tests.cli import run_cli
from tests.infer.run_data import cnn_batches

REPO = Path(__file__).resolve().parents[2]


def _npy(path: Path, samples: int = 5) -> Path:
    np.save(path, np.random.default_rng(0).normal(size=(samples, 8, 8, 3)).astype(np.float32))
    return path


# --- 2. --force and links ---------------------------------------------------------------------------------------


def test_force_never_writes_through_a_link_out_of_the_output(frozen_small_cnn: ModelContract, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    precious = tmp_path / "precious"
    precious.mkdir()
    for name in ("000000.bin", "000007.bin", "notes.txt"):
        (precious / name).write_bytes(b"precious " + name.encode())
    out = tmp_path / "d"
    out.mkdir()
    (out / "images").symlink_to("../precious")
    result = run_cli(capsys, "dump-bin", "-m", frozen_small_cnn.path, "-o", out, _npy(tmp_path / "data.npy"),
                     "--force")
    assert result.code == 2
    assert result.error_line == (f"error: {out / 'images'}: a link to {precious}, outside the output folder {out}; "
                                 f"--force never writes or deletes through it")
    assert sorted(p.name for p in precious.iterdir()) == ["000000.bin", "000007.bin", "notes.txt"]
    assert all(p.read_bytes() == b"precious " + p.name.encode() for p in precious.iterdir())


def test_a_link_inside_the_output_folder_is_no_reason_to_refuse(frozen_small_cnn: ModelContract, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "d"
    (out / "elsewhere").mkdir(parents=True)
    (out / "alias").symlink_to("elsewhere")
    result = run_cli(capsys, "dump-bin", "-m", frozen_small_cnn.path, "-o", out, _npy(tmp_path / "data.npy"),
                     "--force")
    assert result.code == 0, result.err


@pytest.mark.slow
def test_compare_report_into_an_existing_folder_needs_force(onnx_small_cnn: ModelContract, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    bins = tmp_path / "bins"
    write_dataset(bins, {"images:0": cnn_batches(2)}, layout="NHWC")
    assert run_cli(capsys, "run", onnx_small_cnn.path, "--input", bins, "-o", tmp_path / "out").code == 0
    (actual,) = (tmp_path / "out").iterdir()
    report = tmp_path / "report"
    report.mkdir()
    (report / "report.json").write_text("{}")
    args = ("compare", onnx_small_cnn.path, "--input", bins, "--actual", actual, "--golden", actual,
            "--allow-same-backend", "--report", report)
    refused = run_cli(capsys, *args)
    assert refused.code == 2 and refused.error_line == f"error: {report}: exists already"
    assert (report / "report.json").read_text() == "{}"
    (tmp_path / "precious").mkdir()
    (report / "html").symlink_to(tmp_path / "precious")
    linked = run_cli(capsys, *args, "--force")
    assert linked.code == 2 and linked.error_line.startswith(f"error: {report / 'html'}: a link to ")
    (report / "html").unlink()
    assert run_cli(capsys, *args, "--force").code == 0
    assert (report / "report.json").read_text() != "{}"


# --- 3. one writer per folder -----------------------------------------------------------------------------------


@pytest.fixture
def lock_holder() -> Iterator[Callable[[Path], int]]:
    """Starts another process that holds a folder's lock until the test ends; returns its pid."""
    started: list[subprocess.Popen[str]] = []

    def hold(folder: Path) -> int:
        code = ("import sys, time; from pathlib import Path; from binio.lock import folder_lock\n"
                "with folder_lock(Path(sys.argv[1]), command='test'):\n"
                "    print('locked', flush=True); time.sleep(600)\n")
        process = subprocess.Popen([sys.executable, "-c", code, str(folder)], stdout=subprocess.PIPE, text=True,
                                   cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
        started.append(process)
        assert process.stdout is not None and process.stdout.readline().strip() == "locked"
        return process.pid

    yield hold
    for process in started:
        process.kill()
        process.wait()


def test_a_second_dump_bin_into_a_folder_being_written_is_refused_at_once(
        frozen_small_cnn: ModelContract, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        lock_holder: Callable[[Path], int]) -> None:
    out = tmp_path / "bins"
    data = _npy(tmp_path / "data.npy")
    assert run_cli(capsys, "dump-bin", "-m", frozen_small_cnn.path, "-o", out, data).code == 0
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    pid = lock_holder(out)
    result = run_cli(capsys, "dump-bin", "-m", frozen_small_cnn.path, "-o", out, data, "--force")
    assert result.code == 2
    assert result.error_line == (f"error: {out}: another infer (pid {pid}) is writing into this folder now; "
                                 f"dump-bin refused")
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file() and p.name != ".infer.lock"} == before


@pytest.mark.slow
def test_run_compare_report_and_tune_precision_hold_the_lock_too(
        onnx_small_cnn: ModelContract, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        lock_holder: Callable[[Path], int]) -> None:
    bins = tmp_path / "bins"
    write_dataset(bins, {"images:0": cnn_batches(2)}, layout="NHWC")
    pid = lock_holder(tmp_path / "out")
    run = run_cli(capsys, "run", onnx_small_cnn.path, "--input", bins, "-o", tmp_path / "out")
    assert run.error_line == (f"error: {tmp_path / 'out'}: another infer (pid {pid}) is writing into this folder "
                              f"now; run refused")
    sharded = run_cli(capsys, "run", onnx_small_cnn.path, "--input", bins, "-o", tmp_path / "out", "--devices", "0")
    assert sharded.error_line == run.error_line
    assert run_cli(capsys, "run", onnx_small_cnn.path, "--input", bins, "-o", tmp_path / "mine").code == 0
    (actual,) = (tmp_path / "mine").iterdir()
    pid = lock_holder(tmp_path / "report")
    compare = run_cli(capsys, "compare", onnx_small_cnn.path, "--input", bins, "--actual", actual, "--golden",
                      actual, "--allow-same-backend", "--report", tmp_path / "report")
    assert compare.error_line == (f"error: {tmp_path / 'report'}: another infer (pid {pid}) is writing into this "
                                  f"folder now; compare --report refused")
    # Two tunes into one -o would clear each other's work folder: the second is refused before it starts.
    pid = lock_holder(tmp_path / "tune")
    tune = run_cli(capsys, "tune-precision", onnx_small_cnn.path, "--input", bins, "-o", tmp_path / "tune")
    assert tune.error_line == (f"error: {tmp_path / 'tune'}: another infer (pid {pid}) is writing into this folder "
                               f"now; tune-precision refused")
    assert [p.name for p in (tmp_path / "tune").iterdir()] == [".infer.lock"]  # the holder's; nothing of ours


def test_pipeline_run_holds_its_work_folder(frozen_small_cnn: ModelContract, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str],
                                            lock_holder: Callable[[Path], int]) -> None:
    from infer.pipeline.config import load_config

    target = tmp_path / "pipeline.toml"
    init = run_cli(capsys, "pipeline", "init", frozen_small_cnn.pb_path, "-o", target, "--data",
                   _npy(tmp_path / "data.npy"))
    assert init.code == 0, init.err
    work = load_config(target).work_dir
    pid = lock_holder(work)
    result = run_cli(capsys, "pipeline", "run", target)
    assert result.error_line == (f"error: {work}: another infer (pid {pid}) is writing into this folder now; "
                                 f"pipeline run refused")


@pytest.mark.slow
def test_two_dump_bins_at_once_never_leave_a_mix(frozen_small_cnn: ModelContract, tmp_path: Path) -> None:
    """Real concurrency: two processes, one folder. One writes; the other is refused; the result verifies."""
    out = tmp_path / "bins"
    data = [_npy(tmp_path / "a.npy", 4000), tmp_path / "b.npy"]
    np.save(data[1], np.ones((4000, 8, 8, 3), np.float32))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    processes = [subprocess.Popen([sys.executable, "-m", "infer", "dump-bin", "-m", str(frozen_small_cnn.path),
                                   "-o", str(out), str(source), "--force"], env=env, cwd=REPO, text=True,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE) for source in data]
    results = [(p.wait(timeout=300), p.stderr.read() if p.stderr else "") for p in processes]
    codes = sorted(code for code, _ in results)
    assert codes[0] == 0
    if codes[1] != 0:  # they overlapped: the second was refused by name
        assert any("is writing into this folder now; dump-bin refused" in err for _, err in results)
    from binio.dataset import open_dataset

    open_dataset(out, verify=True)  # every file is the one its manifest lists: no mix


def test_a_failed_dump_removes_only_the_files_it_created(frozen_small_cnn: ModelContract, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    import infer.dump_bin._dump

    data = np.zeros((6, 8, 8, 3), np.float64)
    data[5, 0, 0, 0] = 1e300  # does not survive the cast to float32: the third batch is refused
    np.save(tmp_path / "data.npy", data)
    out = tmp_path / "bins"
    out.mkdir()
    original = infer.dump_bin._dump._write_batch
    foreign = out / "images" / "someone-elses.bin"

    def write_and_meanwhile_another_writes(*args: Any, **kwargs: Any) -> Any:  # passes the call through as it is
        if not foreign.exists():
            foreign.write_bytes(b"not ours")
        return original(*args, **kwargs)

    monkeypatch.setattr(infer.dump_bin._dump, "_write_batch", write_and_meanwhile_another_writes)
    result = run_cli(capsys, "dump-bin", "-m", frozen_small_cnn.path, "-o", out, tmp_path / "data.npy")
    assert result.code == 2 and "casting float64 to float32" in result.error_line
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*")) == ["images", "images/someone-elses.bin"]


# --- 4. modes ---------------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(("mask", "mode"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_files_get_the_mode_the_umask_gives(onnx_small_cnn: ModelContract, tmp_path: Path, mask: int, mode: int,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    previous = os.umask(mask)
    try:
        dumped = run_cli(capsys, "dump-bin", "-m", onnx_small_cnn.path, "-o", tmp_path / "bins",
                         _npy(tmp_path / "data.npy"))
        assert dumped.code == 0, dumped.err
        assert run_cli(capsys, "run", onnx_small_cnn.path, "--input", tmp_path / "bins", "-o",
                       tmp_path / "out").code == 0
    finally:
        os.umask(previous)
    manifest = load_manifest(tmp_path / "bins")
    written = [manifest.path, *(manifest.file_path(i, e) for i in manifest.inputs for e in i.files),
               *(p for p in (tmp_path / "out").rglob("*") if p.is_file())]
    assert len(written) > 5
    assert {oct(stat.S_IMODE(p.stat().st_mode)) for p in written} == {oct(mode)}
