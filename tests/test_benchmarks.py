"""benchmarks/run_all.py runs every benchmarks/bench_*.py through one convention: `main(quick=False)` returning
(name, ratio, note) rows. Checked on the source (nothing is imported or run: benchmarks take minutes)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

BENCHMARKS = sorted((Path(__file__).resolve().parents[1] / "benchmarks").glob("bench_*.py"))


def test_there_are_benchmarks() -> None:
    assert {p.stem for p in BENCHMARKS} >= {"bench_compare", "bench_dump_bin", "bench_run"}


@pytest.mark.parametrize("path", BENCHMARKS, ids=lambda p: p.stem)
def test_main_takes_quick_and_returns_rows(path: Path) -> None:
    tree = ast.parse(path.read_text())
    main = next((node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "main"), None)
    assert main is not None, f"{path.name}: no top-level main()"
    arguments = main.args
    assert [a.arg for a in arguments.args] == ["quick"], f"{path.name}: main's parameters are not (quick)"
    assert len(arguments.defaults) == 1 and ast.literal_eval(arguments.defaults[0]) is False
    assert main.returns is not None and ast.unparse(main.returns) in ("list[Row]", "list[tuple[str, float, str]]"), \
        f"{path.name}: main() does not return list[(name, ratio, note)]"
    assert "__main__" in path.read_text(), f"{path.name}: cannot be run on its own"


@pytest.mark.slow
def test_endtoend_alternates_whole_processes_and_checks_their_outputs(tmp_path: Path) -> None:
    """The harness every benchmark uses: each side runs `rounds` times as its own process, with its output removed
    before each run, and the check sees both outputs; outputs that differ are an error, not a figure."""
    import sys

    sys.path.insert(0, str(BENCHMARKS[0].parent))
    from endtoend import Side, alternate, same_files

    def writer(folder: Path, text: str) -> list[str]:
        script = (f"import pathlib; p = pathlib.Path({str(folder)!r}); assert not p.exists(); p.mkdir(); "
                  f"(p / '000000.bin').write_text({text!r})")
        return [sys.executable, "-c", script]

    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    result = alternate([Side("ours", writer(ours, "same"), ours), Side("theirs", writer(theirs, "same"), theirs)], 3,
                       check=lambda: same_files(ours, theirs))
    assert [len(result.runs[name].seconds) for name in ("ours", "theirs")] == [3, 3]
    assert result.equal == "1 files equal byte for byte"
    assert all(peak > 1 for peak in result.runs["ours"].peak_mib)
    assert not ours.exists() and not theirs.exists()
    with pytest.raises(AssertionError, match="differs"):
        alternate([Side("ours", writer(ours, "one"), ours), Side("theirs", writer(theirs, "two"), theirs)], 1,
                  check=lambda: same_files(ours, theirs))


def test_markdown_prints_the_readme_section_with_each_rows_command() -> None:
    """`run_all.py --markdown` output: the run line (command, machine, load) and one table row per figure, each
    naming the command that measures it; a benchmark that failed is a row saying so."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("run_all_under_test", BENCHMARKS[0].parent / "run_all.py")
    assert spec is not None and spec.loader is not None
    run_all = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run_all)
    results = [("dump_bin", [("npy -> float16, 301 MB: time", 1.04, "infer dump-bin 1.2 s | target <= 1.25x")], "",
                3.0), ("run", [], "failed: RuntimeError: boom", 1.0)]
    section = run_all.readme_section(results, "python benchmarks/run_all.py dump run", "python benchmarks/run_all.py",
                                     (5.0, 4.0, 3.0), (6.0, 4.5, 3.1))
    lines = section.splitlines()
    assert lines[0].startswith("Latest full run: `python benchmarks/run_all.py dump run`, ")
    assert "5.0 4.0 3.0 at the start, 6.0 4.5 3.1 at the end" in lines[0]
    assert lines[2:] == [
        "| benchmark | case | figure | against, target, detail | command |", "|---|---|---|---|---|",
        "| dump_bin | npy -> float16, 301 MB: time | 1.04x | infer dump-bin 1.2 s / target <= 1.25x | "
        "`python benchmarks/run_all.py dump` |",
        "| run | - | - | failed: RuntimeError: boom | `python benchmarks/run_all.py run` |"]
