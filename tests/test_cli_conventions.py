"""Command-line conventions every command shares: -v/-vv/-q before or after the command's name, --version."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

import infer
from infer.contract import ModelContract
from tests.cli import Arg, run_cli
from tests.conftest import Copy


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    """The CLI configures the root logger; put it back for the tests that follow."""
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


def _level_after(capsys: pytest.CaptureFixture[str], *args: Arg) -> int:
    outcome = run_cli(capsys, *args)
    assert "No such option" not in outcome.err, outcome.err
    return logging.getLogger().getEffectiveLevel()


@pytest.mark.parametrize(("args", "level"), [
    (("doctor",), logging.WARNING),
    (("-v", "doctor"), logging.INFO),
    (("doctor", "-v"), logging.INFO),
    (("doctor", "-vv"), logging.DEBUG),
    (("doctor", "--verbose", "--verbose"), logging.DEBUG),
    (("-v", "doctor", "-v"), logging.DEBUG),
    (("doctor", "--json", "-q"), logging.ERROR),
    (("-q", "doctor"), logging.ERROR),
    (("pipeline", "-v", "init", "no-such-model", "-o", "x.toml"), logging.INFO),
    (("pipeline", "init", "no-such-model", "-o", "x.toml", "-vv"), logging.DEBUG),
])
def test_verbosity_is_read_before_and_after_the_command(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...],
                                                        level: int) -> None:
    monkeypatch.chdir(tmp_path)
    assert _level_after(capsys, *args) == level


def test_run_takes_v_after_its_arguments(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """`infer run ... -v` was refused as an unknown option: -v only worked before the subcommand."""
    outcome = run_cli(capsys, "run", tmp_path / "model.json", "--input", tmp_path, "-o", tmp_path / "out", "-v")
    assert outcome.error_line.startswith(f"error: {tmp_path / 'model.json'}: no such model contract")
    assert logging.getLogger().getEffectiveLevel() == logging.INFO


def test_quiet_and_verbose_together_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    outcome = run_cli(capsys, "-q", "doctor", "-v")
    assert (outcome.code, outcome.error_line) == (
        2, "error: -q/--quiet and -v/--verbose ask for opposite things: give one of them")
    assert outcome.out == ""


@pytest.mark.slow
def test_quiet_keeps_the_result_and_drops_the_progress_lines(capsys: pytest.CaptureFixture[str],
                                                             frozen_small_cnn: ModelContract, tmp_path: Path) -> None:
    import shutil

    for name in ("a", "b"):
        shutil.copytree(frozen_small_cnn.folder, tmp_path / name)
    asked = ("--target", "onnx", "--op-select-implmode", "high_precision")  # which the stand-in ignores, warning
    spoken = run_cli(capsys, "convert", tmp_path / "a", *asked)
    assert spoken.code == 0 and "warning: ignored for target onnx: --op-select-implmode" in spoken.err
    quiet = run_cli(capsys, "convert", tmp_path / "b", *asked, "-q")
    assert (quiet.code, quiet.err) == (0, "")
    untimed = [re.sub(r" in [0-9.]+ s\b", "", out) for out in (quiet.out, spoken.out)]  # convert times itself
    assert untimed[0] == untimed[1].replace(str(tmp_path / "a"), str(tmp_path / "b"))
    refused = run_cli(capsys, "-q", "bin-info", tmp_path / "missing")
    assert refused.code == 2 and refused.error_line  # errors still come through


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    outcome = run_cli(capsys, "--version")
    assert (outcome.code, outcome.out, outcome.err) == (0, f"infer {infer.__version__}\n", "")


def test_doctor_names_infers_own_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(capsys, "doctor").out.splitlines()[0] == f"infer {infer.__version__}"
    assert json.loads(run_cli(capsys, "doctor", "--json").out)["infer"] == {"version": infer.__version__}


def test_every_command_lists_the_verbosity_options_in_its_help(capsys: pytest.CaptureFixture[str]) -> None:
    for command in (("run",), ("dump-bin",), ("pipeline", "run"), ("doctor",)):
        outcome = run_cli(capsys, *command, "--help")
        assert outcome.code == 0
        assert "--verbose" in outcome.out and "--quiet" in outcome.out, command


def test_the_roots_summary_of_each_command_is_its_docstrings_first_line() -> None:
    """The root's help lists the commands without importing them (infer/cli/app.py writes each summary): each is the
    first line of its command's help, so the two cannot drift."""
    import inspect

    import typer

    from infer.cli.app import _COMMANDS, command_target

    for name, (_, _, summary) in _COMMANDS.items():
        target = command_target(name)
        text = target.info.help if isinstance(target, typer.Typer) else inspect.getdoc(target)
        assert text is not None and text.splitlines()[0] == summary, name


@pytest.mark.parametrize(("args", "line"), [
    (("convert", "--tagret", "om", "model.json"),
     "error: infer convert: No such option: --tagret (Possible options: --target)"),
    (("convrt",), "error: infer: No such command 'convrt'. Did you mean 'convert'?"),
    (("convert",), "error: infer convert: Missing argument 'model'."),
    (("dump-bin", "-m", "model.json"), "error: infer dump-bin: Missing option '--output' / '-o'."),
    (("run", "m.json", "-i", "b", "-o", "o", "--loop", "many"),
     "error: infer run: Invalid value for '--loop': "),  # the rest is typer's (pydantic's, in 0.29) wording
])
def test_a_usage_error_is_one_error_line_like_every_other_refusal(capsys: pytest.CaptureFixture[str],
                                                                   args: tuple[str, ...], line: str) -> None:
    """Not click's block (usage, "Try 'infer -h' for help.", a blank line, "Error: ..."): one line and a hint."""
    outcome = run_cli(capsys, *args)
    assert outcome.code == 2 and outcome.out == ""
    assert outcome.error_line == line or (line.endswith(": ") and outcome.error_line.startswith(line))
    assert outcome.err.splitlines()[1].startswith("hint: infer") and "Usage:" not in outcome.err


@pytest.mark.slow
def test_infer_alone_shows_its_help() -> None:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", "from infer.cli.app import main; main([])"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.startswith("Usage: infer [OPTIONS] COMMAND [ARGS]...")
    assert "pipeline" in done.stderr and "error:" not in done.stderr


@pytest.mark.slow
def test_shell_completion_is_on_and_completes_a_commands_flags() -> None:
    """typer's completion (--install-completion / --show-completion), answering from every command's flags."""
    import os
    import subprocess
    import sys

    script = subprocess.run([sys.executable, "-c", "from infer.cli.app import main; main(['--show-completion', "
                             "'bash'])"], capture_output=True, text=True, timeout=120)
    assert script.returncode == 0 and "_infer_completion" in script.stdout
    env = {**os.environ, "_INFER_COMPLETE": "complete_bash", "COMP_WORDS": "infer convert --tim", "COMP_CWORD": "2"}
    done = subprocess.run([sys.executable, "-c", "from infer.cli.app import main; main()"], capture_output=True,
                          text=True, timeout=120, env=env)
    assert "--timeout" in done.stdout.split(), done.stdout + done.stderr


def test_tables_are_plain_columns_in_a_pipe_or_under_no_color(monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    import sys

    from infer.cli.console import plain_output, table

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert not plain_output() and table("t").box is not None  # a terminal: boxed
    monkeypatch.setenv("NO_COLOR", "1")
    assert plain_output() and table("t").box is None
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setattr(sys.stdout, "isatty", lambda: False)
    assert plain_output() and table("t").box is None  # a pipe or a file


@pytest.mark.slow
def test_a_logged_warning_and_a_commands_own_warning_read_alike(onnx_small_cnn: ModelContract, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str],
                                                               frozen_small_cnn: ModelContract,
                                                               copy_model: Copy) -> None:
    """One warning format: what a library module logs and what a command says itself both start `warning: `
    (not logging's `WARNING infer.run._plain: `); -vv adds the logger's name, -q drops both."""
    from dataclasses import replace

    from tests.builders.bins import write_dataset
    from tests.infer.run_data import cnn_batches

    manifest = replace(write_dataset(tmp_path / "bins", {"images:0": cnn_batches(1)}), model_sha256="ab" * 32).save()
    outcome = run_cli(capsys, "run", onnx_small_cnn.path, "--input", manifest.root, "-o", tmp_path / "out")
    assert outcome.code == 0, outcome.err
    logged = [line for line in outcome.err.splitlines() if "made for another model" in line]
    assert logged == [f"warning: {manifest.path}: made for another model (sha256 {'ab' * 6}), running "
                      f"{onnx_small_cnn.converted_path}"]
    named = run_cli(capsys, "run", onnx_small_cnn.path, "--input", manifest.root, "-o", tmp_path / "out2", "-vv")
    assert f"warning [infer.run._plain]: {manifest.path}: made for another model" in named.err
    quiet = run_cli(capsys, "run", onnx_small_cnn.path, "--input", manifest.root, "-o", tmp_path / "out3", "-q")
    assert "made for another model" not in quiet.err
    said = run_cli(capsys, "convert", copy_model(frozen_small_cnn).folder, "--target", "onnx",
                   "--op-select-implmode", "high_precision")
    assert said.code == 0, said.err
    assert "warning: ignored for target onnx: --op-select-implmode" in said.err.splitlines()


def test_no_command_spells_its_warnings_by_hand() -> None:
    """Every `warning: ` a command prints goes through console.warn (or logging), so the format stays one."""
    import re

    cli = Path(infer.__file__).parent / "cli"
    by_hand = [f"{path.name}:{number}" for path in sorted(cli.glob("*.py")) if path.name != "console.py"
               for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
               if re.search(r"""["'](warning|WARNING|Warning):""", line)]
    assert by_hand == []
