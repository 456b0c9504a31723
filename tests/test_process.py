"""The single subprocess wrapper: argv lists, captured output, timeouts, missing tools."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from binio.process import ToolError, find_tool, quote_command, run_tool


def _script(folder: Path, name: str, body: str) -> Path:
    path = folder / name
    path.write_text(f"#!{sys.executable}\n{body}\n")
    path.chmod(0o755)
    return path


def test_output_and_exit_code_are_returned_unjudged(tmp_path: Path) -> None:
    tool = _script(tmp_path, "tool", "import sys\nprint('hello', sys.argv[1:])\nprint('oops', file=sys.stderr)\n"
                                     "sys.exit(3)")
    result = run_tool([str(tool), "a b", "--x=1;2"], timeout=30)
    assert result.returncode == 3
    assert result.lines == ["hello ['a b', '--x=1;2']", "oops"]


@pytest.mark.slow
def test_a_hang_ends_at_the_timeout_with_the_last_output(tmp_path: Path) -> None:
    tool = _script(tmp_path, "hang", "import time\nprint('started', flush=True)\ntime.sleep(60)")
    with pytest.raises(ToolError, match=r"^hang: no result after 1 s; stopped it and the processes it started "
                                        r"\(TERM, then KILL after 5 s\). Last output:\nstarted$"):
        run_tool([str(tool)], timeout=1)


def test_missing_executable_is_a_clean_error(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match=r"nothere: executable not found$"):
        run_tool([str(tmp_path / "nothere")], timeout=5)


def test_find_tool_looks_on_path_then_in_extra_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    extra = tmp_path / "toolkit" / "bin"
    extra.mkdir(parents=True)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert find_tool("atc") is None
    tool = _script(extra, "atc", "pass")
    assert find_tool("atc", extra_dirs=[extra]) == tool
    monkeypatch.setenv("PATH", f"{extra}{os.pathsep}{os.environ['PATH']}")
    assert find_tool("atc") == tool


def test_quoted_command_is_shell_safe() -> None:
    assert quote_command(["atc", '--input_shape=a:1,2;b:3', "--out_nodes=x:0"]) == \
        "atc '--input_shape=a:1,2;b:3' --out_nodes=x:0"


def test_missing_working_folder_is_named_as_such(tmp_path: Path) -> None:
    tool = _script(tmp_path, "tool", "pass")
    with pytest.raises(ToolError, match=r"gone: working folder for tool does not exist$"):
        run_tool([str(tool)], timeout=5, cwd=tmp_path / "gone")
