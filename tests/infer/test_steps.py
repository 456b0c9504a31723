"""freeze and convert show their steps on a terminal (a spinner line per step, gone at the end) and print nothing
extra in a pipe: real runs of the `infer` command, on a pseudo-terminal and on a pipe."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
from pathlib import Path

import pytest

from tests.models import BuiltModel

_COMMAND = [sys.executable, "-c", "from infer.cli.app import main; main()"]


def _on_a_terminal(args: list[str]) -> tuple[int, str]:
    """Runs `infer ARGS` with stderr on a pseudo-terminal (stdout a pipe): its exit code and what the terminal got."""
    leader, follower = pty.openpty()
    env = {**os.environ, "COLUMNS": "160", "TERM": "xterm"}
    process = subprocess.Popen([*_COMMAND, *args], stdout=subprocess.PIPE, stderr=follower, env=env)
    os.close(follower)
    received = bytearray()
    while True:
        ready, _, _ = select.select([leader], [], [], 300)
        if not ready:
            process.kill()
            raise AssertionError("infer hung on a terminal: " + received.decode(errors="replace"))
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal closed: the process ended
            break
        if not chunk:
            break
        received += chunk
    assert process.stdout is not None
    process.stdout.read()
    os.close(leader)
    return process.wait(timeout=60), received.decode(errors="replace")


@pytest.mark.slow
def test_freeze_and_convert_show_their_steps_on_a_terminal_only(small_cnn: BuiltModel, tmp_path: Path) -> None:
    freeze = ["freeze", str(small_cnn.prefix), "-o", str(tmp_path / "m"), "--outputs", ",".join(small_cnn.outputs),
              "--batch", "2"]
    code, terminal = _on_a_terminal(freeze)
    assert code == 0, terminal
    for step in ("freeze: importing TensorFlow", "freeze: restoring the variables",
                 "freeze: running the frozen graph on the same inputs (verification)", "freeze: writing "):
        assert step in terminal, terminal
    code, terminal = _on_a_terminal(["convert", str(tmp_path / "m" / "model.json"), "--target", "onnx"])
    assert code == 0, terminal
    for step in ("convert: converting with tf2onnx", "convert: emulating force_fp16",
                 "convert: checking the ONNX model"):
        assert step in terminal, terminal
    piped = subprocess.run([*_COMMAND, *freeze, "--force"], capture_output=True, text=True, timeout=300)
    assert piped.returncode == 0, piped.stderr
    assert "restoring the variables" not in piped.stderr and "importing TensorFlow" not in piped.stderr
    quiet = _on_a_terminal([*freeze, "--force", "-q"])
    assert quiet[0] == 0 and "restoring the variables" not in quiet[1]
