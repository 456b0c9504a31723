"""The layers hold, read from the source with `ast` (every import, at module level or inside a function).

binio (numpy only) < ckpt2pb (TensorFlow) and atc_wrap (ATC, tf2onnx), apart from each other < infer; only
infer.cli imports typer and rich, and nothing but the `infer` entry point imports infer.cli (docs/architecture.md).
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("binio", "ckpt2pb", "atc_wrap", "infer")
ENTRY_POINTS = {"infer/__main__.py"}  # `python -m infer` runs the command line: the one module allowed to


def imported_modules(source: str, module: str) -> set[str]:
    """Every module `source` (the text of `module`) imports, as dotted names; relative imports made absolute."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                package = module.split(".")[:-1]  # a module's package; for an __init__, its own
                prefix = ".".join(package[: len(package) - node.level + 1])
                name = f"{prefix}.{node.module}" if node.module else prefix
            else:
                name = node.module or ""
            found.add(name)
            # `from infer import cli` imports infer.cli: the names may be modules too
            found.update(f"{name}.{alias.name}" for alias in node.names if alias.name != "*")
    return found


def _package_imports() -> dict[str, set[str]]:
    """Source file (relative to the repository) -> the modules it imports."""
    imports: dict[str, set[str]] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT)
            module = ".".join(relative.with_suffix("").parts)
            imports[relative.as_posix()] = imported_modules(path.read_text(encoding="utf-8"), module)
    return imports


IMPORTS = _package_imports()


def _top(name: str) -> str:
    return name.split(".")[0]


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def _violations(files: str, allowed: Callable[[str], bool]) -> list[str]:
    return [f"{path}: imports {name}" for path, names in IMPORTS.items() if path.startswith(files)
            for name in sorted(names) if not allowed(name)]


def test_the_sources_were_read() -> None:
    assert len(IMPORTS) > 50
    assert "numpy" in IMPORTS["binio/binfile.py"]


def test_binio_imports_only_numpy_and_the_standard_library() -> None:
    def allowed(name: str) -> bool:
        return _top(name) in sys.stdlib_module_names or _top(name) in ("numpy", "binio")

    assert _violations("binio/", allowed) == []


@pytest.mark.parametrize(("package", "other"), [("ckpt2pb", "atc_wrap"), ("atc_wrap", "ckpt2pb")])
def test_ckpt2pb_and_atc_wrap_never_import_each_other(package: str, other: str) -> None:
    assert _violations(f"{package}/", lambda name: not _within(name, other)) == []


@pytest.mark.parametrize("package", ["binio", "ckpt2pb", "atc_wrap"])
def test_the_lower_layers_never_import_infer(package: str) -> None:
    assert _violations(f"{package}/", lambda name: not _within(name, "infer")) == []


def test_nothing_outside_the_command_line_imports_it() -> None:
    outside = [f"{path}: imports {name}" for path, names in IMPORTS.items()
               if not path.startswith("infer/cli/") and path not in ENTRY_POINTS
               for name in sorted(names) if _within(name, "infer.cli")]
    assert outside == []


def test_only_the_command_line_imports_typer_and_rich() -> None:
    outside = [f"{path}: imports {name}" for path, names in IMPORTS.items() if not path.startswith("infer/cli/")
               for name in sorted(names) if _top(name) in ("typer", "rich", "click")]
    assert outside == []


def test_the_reader_sees_imports_inside_functions_and_relative_ones() -> None:
    """The checks above can fail: an import hidden in a function, or written relatively, is still seen."""
    source = "def f():\n    import typer\n    from .cli import app\n    from infer import cli\n"
    assert imported_modules(source, "infer.run") >= {"typer", "infer.cli", "infer.cli.app"}
    assert "infer.cli" in imported_modules("from . import cli\n", "infer.__init__")


def test_the_runners_reach_their_tools_without_the_converter_layer() -> None:
    """msame and ais_bench run through binio's subprocess wrapper: infer/run needs nothing of atc_wrap for it."""
    assert _violations("infer/run/", lambda name: not _within(name, "atc_wrap")) == []
