"""Ctrl-C, as a terminal delivers it (SIGINT to a child `infer` process): the command says it was interrupted and
what it kept, exits 130, and no press is lost, not even one landing inside a finaliser (a weakref callback), where
Python prints "Exception ignored" and goes on."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from infer.cli.interrupts import KEPT

REPO = Path(__file__).resolve().parents[2]

# `infer doctor`'s module replaced by one whose command frees an object whose weakref callback is slow: the press
# lands inside the callback. The command would print "not interrupted" and exit 0 were the press dropped.
_FINALISER_COMMAND = """
import sys, time, weakref
from infer.cli import app

class Thing:
    pass

def slow_finaliser(ref):
    print("in the finaliser", flush=True)
    time.sleep(5)

def command() -> None:
    thing = Thing()
    watch = weakref.ref(thing, slow_finaliser)
    del thing
    time.sleep(0.5)  # where the press, delivered again, unwinds the command
    print("not interrupted", flush=True)

sys.modules["fake_doctor"] = sys.modules[__name__]
app._COMMANDS["doctor"] = ("fake_doctor", "command", "The stand-in command.")
app.main(["doctor"])
"""


def _ctrl_c_by_default() -> None:
    """In the child: a suite started in the background (nohup ... &) hands SIGINT on ignored; a terminal's child
    takes it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start(args: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, *args], cwd=REPO, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(REPO)},
                            preexec_fn=_ctrl_c_by_default)


def _wait_for_line(process: subprocess.Popen[str], wanted: str, seconds: float) -> list[str]:
    """stdout's lines up to the first that starts with `wanted`."""
    assert process.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        lines.append(line.rstrip("\n"))
        if line.startswith(wanted):
            return lines
    process.kill()
    raise AssertionError(f"no line starting {wanted!r} in {seconds} s: {lines}")


def test_a_press_inside_a_finaliser_is_not_lost() -> None:
    process = _start(["-c", _FINALISER_COMMAND])
    _wait_for_line(process, "in the finaliser", 120)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert "not interrupted" not in out
    assert "Exception ignored" not in err and "Traceback" not in err, err
    assert err.splitlines()[-1] == "interrupted (Ctrl-C): nothing was half-written"


def test_every_command_says_what_an_interrupt_keeps() -> None:
    from infer.cli.app import _COMMANDS

    assert set(KEPT) <= set(_COMMANDS)
    stages = set(_COMMANDS) - {"inspect", "bin-info", "doctor"}  # these write nothing
    assert stages <= set(KEPT)


@pytest.mark.slow
def test_ctrl_c_during_the_demo_says_interrupted_and_what_it_kept(tmp_path: Path) -> None:
    """Pressed once the stages are under way: exit 130, one line saying so and what was kept, no traceback."""
    process = _start(["-m", "infer", "demo", "-o", str(tmp_path / "demo")])
    _wait_for_line(process, "freeze", 300)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 130, out + err
    assert "Traceback" not in err and "Exception ignored" not in err, err
    assert err.splitlines()[-1] == f"interrupted (Ctrl-C): {KEPT['demo']}"
    assert (tmp_path / "demo" / "work" / "pipeline-state.json").is_file()  # freeze, at least, is kept
