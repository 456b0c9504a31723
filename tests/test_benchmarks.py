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
