"""External tools are stopped as a whole (their process group: TERM, then KILL) on a timeout, Ctrl-C or SIGTERM,
and sharded worker processes end when their driver dies, even by kill -9. The fakes spawn children and hang."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from binio.errors import Terminated
from binio.manifest import DatasetManifest
from binio.process import ToolError, ToolResult, run_tool, stop_running_tools, stops_tools_with
from infer.cli.interrupts import KEPT
from infer.contract import ModelContract
from tests.builders.bins import write_dataset
from tests.cli import run_cli
from tests.infer.run_data import as_om, cnn_batches, use_fake_tools

REPO = Path(__file__).resolve().parents[2]

# A tool that starts two children, one of which ignores TERM (so only KILL ends it), writes their pids and hangs;
# asked for --help (the runners' probe) it answers at once.
_HANGING_TOOL = """#!/bin/sh
case "$*" in *--help*) echo "usage"; exit 0;; esac
sleep 600 &
first=$!
sh -c 'trap "" TERM; while :; do sleep 1; done' &
second=$!
echo "$$ $first $second" >> "{pids}"
echo "started, now hanging"
wait
"""


@pytest.fixture(autouse=True)
def _ctrl_c_reaches_python() -> Iterator[None]:
    """A suite started in the background (`nohup pytest ... &` from a script) inherits SIGINT ignored, and Python
    then installs no KeyboardInterrupt handler, here or in the infer processes these tests start (an ignored signal
    stays ignored across exec). These tests deliver Ctrl-C themselves: it gets Python's handler back for them, here,
    and so the default in every child (exec resets a handled signal)."""
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        yield
        return
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.fixture(autouse=True)
def _no_fake_tool_outlives_its_test(tmp_path: Path) -> Iterator[None]:
    """Whatever a failing test left of its hanging tools is killed, so that a failure costs no stray processes."""
    yield
    for pids in tmp_path.rglob("*.pids"):
        for pid in (int(p) for p in pids.read_text().split()):
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has ended
    except FileNotFoundError:
        return False


def _wait_for(predicate: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def _all_ended(pids: list[int]) -> bool:
    """Whether every pid has ended; a KILL is delivered asynchronously, so a moment is allowed for it to land."""
    return _wait_for(lambda: not [pid for pid in pids if _alive(pid)], 10)


def _pids(path: Path, tools: int = 1) -> list[int]:
    """The pids the hanging tool(s) wrote: each tool's own, then its two children's."""
    assert _wait_for(lambda: path.is_file() and len(path.read_text().split()) == 3 * tools, 60), "no tool started"
    return [int(p) for p in path.read_text().split()]


def _hanging_tool(folder: Path, name: str) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    pids = folder / f"{name}.pids"
    tool = folder / name
    tool.write_text(_HANGING_TOOL.format(pids=pids))
    tool.chmod(0o755)
    return tool, pids


@pytest.mark.slow
def test_a_timeout_stops_the_tool_and_every_process_it_started(tmp_path: Path) -> None:
    tool, pids = _hanging_tool(tmp_path, "atc")
    with pytest.raises(ToolError) as caught:
        run_tool([str(tool)], timeout=1.0, grace=0.5)
    assert caught.value.message.startswith("atc: no result after 1 s; stopped it and the processes it started "
                                           "(TERM, then KILL after 0.5 s). Last output:\nstarted, now hanging")
    assert _all_ended(_pids(pids))


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["Ctrl-C", "SIGTERM"])
def test_a_signal_landing_as_the_tool_starts_still_stops_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            signum: int) -> None:
    """The signal lands after the fork, before run_tool knows the process: it is held until then, not lost."""
    tool, pids = _hanging_tool(tmp_path, "msame")
    started = subprocess.Popen

    def start_then_signal(*args: Any, **kwargs: Any) -> subprocess.Popen[str]:
        process = started(*args, **kwargs)
        _pids(pids)  # the tool and both its children are running
        os.kill(os.getpid(), signum)
        time.sleep(0.2)  # Python runs a handler at the next instruction: here, were the signal not held
        return process

    def terminate(signum: int, frame: object) -> None:
        raise Terminated()

    monkeypatch.setattr(subprocess, "Popen", start_then_signal)
    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        with pytest.raises(KeyboardInterrupt if signum == signal.SIGINT else Terminated):
            run_tool([str(tool)], timeout=60, grace=0.5)
        # The handlers it held the signals from are back.
        assert signal.getsignal(signal.SIGTERM) is terminate
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert _all_ended(_pids(pids))


@pytest.mark.slow
def test_a_stop_from_another_thread_waits_for_a_tool_being_started(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A sharded run's tools are started on threads: a stop that comes between a fork and the registration of the
    tool waits for it, rather than miss it and leave the thread waiting on a tool that nobody stops."""
    tool, pids = _hanging_tool(tmp_path, "msame")
    started = subprocess.Popen
    forked = threading.Event()

    def slow_start(*args: Any, **kwargs: Any) -> subprocess.Popen[str]:
        process = started(*args, **kwargs)
        _pids(pids)
        forked.set()
        time.sleep(0.5)  # the stop comes now, before run_tool has the process
        return process

    monkeypatch.setattr(subprocess, "Popen", slow_start)
    results: list[ToolResult] = []
    thread = threading.Thread(target=lambda: results.append(run_tool([str(tool)], timeout=60, grace=0.5)))
    thread.start()
    assert forked.wait(60)
    stop_running_tools("the test stopped it", grace=0.5)
    thread.join(20)
    assert not thread.is_alive() and results[0].returncode != 0
    assert _all_ended(_pids(pids))


def test_a_thread_of_a_stopped_run_starts_no_tool(tmp_path: Path) -> None:
    """A shard's thread that gets to its tool only after the run was stopped does not start it."""
    tool, pids = _hanging_tool(tmp_path, "msame")
    stopped = threading.Event()
    with stops_tools_with(stopped):
        stopped.set()
        with pytest.raises(ToolError, match=r"^msame: not started, the run was stopped$"):
            run_tool([str(tool)], timeout=60, grace=0.5)
    assert not pids.exists()


def _run_infer(args: list[object], env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "infer", *map(str, args)], cwd=REPO, text=True, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


@pytest.fixture
def om(onnx_small_cnn: ModelContract, tmp_path: Path) -> ModelContract:
    return as_om(onnx_small_cnn, tmp_path / "model")


@pytest.fixture
def bins(tmp_path: Path) -> DatasetManifest:
    return write_dataset(tmp_path / "bins", {"images:0": cnn_batches(2)}, layout="NHWC")


def _communicate_or_dump(process: subprocess.Popen[str], seconds: float) -> tuple[str, str]:
    """The process's output once it ends; if it does not within `seconds`, a failure with its signal masks and every
    thread's stack (faulthandler on SIGABRT), to say where it hangs."""
    try:
        return process.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        status = Path(f"/proc/{process.pid}/status").read_text()
        masks = [line for line in status.splitlines() if line.startswith(("SigBlk", "SigIgn", "SigCgt", "SigPnd",
                                                                           "ShdPnd"))]
        process.send_signal(signal.SIGABRT)
        _, err = process.communicate(timeout=30)
        raise AssertionError(f"no exit after {seconds} s; {masks}\n{err[-8000:]}") from None


def _env_with(folder: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONFAULTHANDLER": "1", "PYTHONPATH": os.pathsep.join([str(folder), str(REPO)]),
            "PATH": os.pathsep.join([str(folder), str(Path(sys.executable).parent), os.environ.get("PATH", "")])}


@pytest.mark.slow
@pytest.mark.parametrize(("how", "signum", "code", "why"), [
    ("Ctrl-C", signal.SIGINT, 130, "infer was interrupted (Ctrl-C)"),
    ("SIGTERM", signal.SIGTERM, 143, "infer was terminated (SIGTERM)"),
])
def test_ctrl_c_and_sigterm_stop_msame_and_its_children(om: ModelContract, bins: DatasetManifest, tmp_path: Path,
                                                        how: str, signum: int, code: int, why: str) -> None:
    _, pids = _hanging_tool(tmp_path / "tools", "msame")
    infer = _run_infer(["run", om.path, "--input", bins.root, "-o", tmp_path / "out"], _env_with(tmp_path / "tools"))
    tool_pids = _pids(pids)
    infer.send_signal(signum)
    _, err = _communicate_or_dump(infer, 60)
    assert infer.returncode == code, err
    assert f"msame: stopping it and the processes it started (process group {tool_pids[0]}): {why}" in err
    assert _all_ended(tool_pids)
    # Said, not a silent 130 (typer turns a KeyboardInterrupt into one), with what the run kept.
    assert err.splitlines()[-1] == (f"interrupted (Ctrl-C): {KEPT['run']}" if signum == signal.SIGINT
                                    else "terminated")


@pytest.mark.slow
def test_run_timeout_stops_a_hanging_msame(om: ModelContract, bins: DatasetManifest, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    use_fake_tools(monkeypatch)
    _, pids = _hanging_tool(tmp_path / "tools", "msame")
    monkeypatch.setenv("PATH", os.pathsep.join([str(tmp_path / "tools"), os.environ["PATH"]]))
    result = run_cli(capsys, "run", om.path, "--input", bins.root, "-o", tmp_path / "out", "--timeout", "1.5")
    assert result.code == 2
    assert result.error_line.startswith("error: msame: no result after 1.5 s; stopped it and the processes it "
                                        "started (TERM, then KILL after 5 s)")
    assert _all_ended(_pids(pids))


@pytest.mark.slow
def test_run_timeout_reaches_ais_bench_too(om: ModelContract, bins: DatasetManifest, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    package = tmp_path / "tools" / "ais_bench"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    tool, pids = _hanging_tool(tmp_path / "tools", "hang.sh")
    (package / "__main__.py").write_text(f"import os, sys\nos.execv({str(tool)!r}, [{str(tool)!r}, *sys.argv[1:]])\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path / "tools"), str(REPO)]))
    result = run_cli(capsys, "run", om.path, "--input", bins.root, "-o", tmp_path / "out", "--backend", "ais_bench",
                     "--timeout", "1")
    assert result.code == 2
    assert result.error_line.startswith("error: python")  # ais_bench runs as `python -m ais_bench`
    assert "no result after 1 s; stopped it and the processes it started" in result.error_line
    assert _all_ended(_pids(pids))


def test_a_timeout_that_is_no_duration_is_refused(om: ModelContract, bins: DatasetManifest, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(capsys, "run", om.path, "--input", bins.root, "-o", tmp_path / "out", "--timeout", "0")
    assert result.error_line == "error: --timeout 0: expected seconds, a finite number more than 0"


@pytest.mark.slow
def test_sigterm_stops_the_tools_of_every_shard(om: ModelContract, tmp_path: Path) -> None:
    write_dataset(tmp_path / "bins", {"images:0": cnn_batches(4)}, layout="NHWC")
    _, pids = _hanging_tool(tmp_path / "tools", "msame")
    infer = _run_infer(["run", om.path, "--input", tmp_path / "bins", "-o", tmp_path / "out", "--devices", "0,1"],
                       _env_with(tmp_path / "tools"))
    tool_pids = _pids(pids, tools=2)
    infer.send_signal(signal.SIGTERM)
    _, err = _communicate_or_dump(infer, 120)  # one 5 s grace for both tools, not one each
    assert infer.returncode == 143, err
    assert err.count("msame: stopping it and the processes it started") == 2, err
    assert _all_ended(tool_pids)


def _children(parent: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == parent and fields[0] != "Z":
                found.append(int(entry.name))
    return found


@pytest.mark.slow
def test_shard_workers_exit_when_their_driver_is_killed(onnx_small_cnn: ModelContract, tmp_path: Path) -> None:
    write_dataset(tmp_path / "bins", {"images:0": cnn_batches(600)}, layout="NHWC")
    driver = _run_infer(["run", onnx_small_cnn.path, "--input", tmp_path / "bins", "-o", tmp_path / "out",
                         "--devices", "0,1"], {**os.environ, "PYTHONPATH": str(REPO)})
    try:
        assert _wait_for(lambda: len(_children(driver.pid)) >= 2, 120), "no workers started"
        time.sleep(1.0)  # the workers are importing or running their shards
        workers = _children(driver.pid)
    finally:
        driver.kill()  # kill -9: the driver runs no clean-up at all
        driver.wait()
    assert _wait_for(lambda: not [pid for pid in workers if _alive(pid)], 20), \
        f"workers still running after their driver died: {[pid for pid in workers if _alive(pid)]}"
