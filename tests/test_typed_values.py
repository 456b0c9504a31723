"""Values that skip typer's pydantic coercion (infer/cli/typed_values.py) are exactly those pydantic would return
unchanged: others are still coerced, and bad ones refused with typer's message."""

from __future__ import annotations

from pathlib import Path

import pytest

from infer.contract import ModelContract
from tests.cli import run_cli


def test_an_int_option_given_as_text_is_still_coerced_and_a_bad_one_refused(frozen_small_cnn: ModelContract,
                                                                            tmp_path: Path,
                                                                            capsys: pytest.CaptureFixture[str]
                                                                            ) -> None:
    good = run_cli(capsys, "dump-bin", "-m", frozen_small_cnn.path, "-o", tmp_path / "bins", "random:1",
                   "--samples", "3", "--workers", "1")
    assert good.code == 0, good.err
    bad = run_cli(capsys, "dump-bin", "-m", frozen_small_cnn.path, "-o", tmp_path / "other", "random:1",
                  "--samples", "three")
    assert bad.code == 2
    assert "Invalid value for '--samples'" in bad.err and "valid integer" in bad.err
    assert not (tmp_path / "other").exists()


def test_counted_and_flag_options_keep_their_values(frozen_small_cnn: ModelContract, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    quiet = run_cli(capsys, "-q", "dump-bin", "-m", frozen_small_cnn.path, "-o", tmp_path / "bins", "random:1",
                    "--samples", "2")
    assert quiet.code == 0 and "wrote 1 batch file" in quiet.out and quiet.err == ""
    both = run_cli(capsys, "-v", "-q", "dump-bin", "-m", frozen_small_cnn.path, "-o", tmp_path / "b2", "random:1")
    assert both.code != 0 and "-q/--quiet and -v/--verbose" in both.err
