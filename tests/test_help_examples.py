"""Every command's --help ends with two or three example invocations, and every one of them runs: in a folder
holding what the examples name (the demo's checkpoint in ckpt/, its PNGs in images/, labels.txt), the stages' in the
order a user would type them, each making what the next one reads. A flag renamed or a default changed fails here."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli import run_cli
from tests.help_examples import COMMANDS, help_examples


def test_every_commands_help_ends_with_two_or_three_examples(capsys: pytest.CaptureFixture[str]) -> None:
    for path, command in COMMANDS.items():
        examples = help_examples(path)
        assert 2 <= len(examples) <= 3, f"{path}: {len(examples)} examples"
        shown = run_cli(capsys, *path.split()[1:], "--help").out.rstrip().splitlines()
        assert shown[-len(examples) - 2].strip() == "Examples:", f"{path}: its help does not end with them"
        if hasattr(command, "commands"):  # a group's examples are its commands' (run with them)
            theirs = [words for name in command.commands for words in help_examples(f"{path} {name}")]
            assert all(words in theirs for words in examples), path
            continue
        for words in examples:
            assert words[:len(path.split())] == path.split(), f"{path}: {words}"
            taken = {opt for parameter in command.params for opt in (*parameter.opts, *parameter.secondary_opts)}
            flags = [word.split("=", 1)[0] for word in words if word.startswith("-")]
            assert all(flag in taken for flag in flags), f"{' '.join(words)}: {path} takes {sorted(taken)}"


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What the examples name: the demo's checkpoint (ckpt/model.ckpt), 60 PNGs (images/) and labels.txt."""
    from infer.demo._dataset import write_dataset
    from infer.demo._model import build_demo_model

    folder = tmp_path_factory.mktemp("examples")
    build_demo_model(folder / "ckpt")
    write_dataset(folder)
    return folder


@pytest.fixture
def inside(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.chdir(workspace)
    monkeypatch.setenv("PATH", "/nonexistent")  # no atc or msame: the stand-in, whatever this machine has
    monkeypatch.delenv("ASCEND_TOOLKIT_HOME", raising=False)
    yield workspace


def _run_examples(capsys: pytest.CaptureFixture[str], *paths: str) -> None:
    for path in paths:
        for words in help_examples(path):
            outcome = run_cli(capsys, *words[1:])
            assert outcome.code == 0, (words, outcome.out[-3000:], outcome.err[-3000:])


def _made_by_the_stages(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """freeze's and convert's examples, once per workspace: what the others read."""
    if not (workspace / "model_dynamic" / "model.onnx").is_file():
        _run_examples(capsys, "infer freeze", "infer convert")


@pytest.mark.slow
def test_the_stages_examples_run(inside: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _made_by_the_stages(inside, capsys)
    _run_examples(capsys, "infer inspect", "infer dump-bin", "infer bin-info", "infer run", "infer compare",
                  "infer tune-precision")
    assert (inside / "report" / "report.html").is_file() and (inside / "tuned" / "tune.json").is_file()


@pytest.mark.slow
def test_the_pipelines_examples_run(inside: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _made_by_the_stages(inside, capsys)  # init's second example reads model/model.pb
    _run_examples(capsys, "infer pipeline init", "infer pipeline run", "infer pipeline tune")
    assert (inside / "work" / "tune" / "keep_dtype.cfg").is_file()


@pytest.mark.slow
def test_the_demos_and_doctors_examples_run(inside: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _run_examples(capsys, "infer doctor", "infer demo")
    assert (inside / "demo-out" / "work-fp16-trouble" / "tune" / "keep_dtype.cfg").is_file()
