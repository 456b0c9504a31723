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


@pytest.mark.slow
def test_a_dump_through_the_cli_imports_no_pydantic(frozen_small_cnn: ModelContract, tmp_path: Path) -> None:
    """Paths, texts, lists of texts and numbers given on the command line need none of typer's pydantic adapters."""
    import subprocess
    import sys

    probe = ("import sys\nfrom infer.cli.app import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit as exc:\n"
             "    print('exit', exc.code)\nprint('pydantic' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", probe, "dump-bin", "-m", str(frozen_small_cnn.path), "-o",
                           str(tmp_path / "bins"), "--source", "images=random:2", "--samples", "3", "--dtype",
                           "float32", "--workers", "1"], capture_output=True, text=True, timeout=300, check=True)
    assert done.stdout.splitlines()[-2:] == ["exit 0", "False"], done.stdout + done.stderr
    assert (tmp_path / "bins" / "dataset.json").is_file()
