"""Work beside the caller: its result or its error when asked, and a process that exits without waiting for it."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from binio.beside import start_beside

REPO = Path(__file__).resolve().parents[2]


def test_the_result_and_the_error_come_when_asked() -> None:
    assert start_beside(lambda: 42, "answer").result(timeout=30) == 42

    def refuse() -> None:
        raise ValueError("stale model")

    with pytest.raises(ValueError, match="stale model"):
        start_beside(refuse, "refusal").result(timeout=30)


def test_a_process_exits_without_waiting_for_work_beside_it() -> None:
    """As on Ctrl-C during a model's hash: the command's exit does not wait for the file to be read to the end."""
    script = ("import threading\nfrom binio.beside import start_beside\n"
              "start_beside(threading.Event().wait, 'forever')\nprint('leaving')\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout == "leaving\n"


def test_the_work_runs_on_a_thread_of_its_own() -> None:
    release = threading.Event()
    future = start_beside(lambda: release.wait(30), "held")
    (thread,) = [t for t in threading.enumerate() if t.name == "held"]
    assert thread is not threading.current_thread() and thread.daemon
    release.set()
    assert future.result(timeout=30) is True
