"""The layers hold, read from the source with `ast` (every import, at module level or inside a function).

binio (numpy and xxhash only) < ckpt2pb (TensorFlow) and atc_wrap (ATC, tf2onnx), apart from each other < infer; only
infer.cli imports typer and rich, and nothing but the `infer` entry point imports infer.cli (docs/architecture.md).
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from binio.exports import LAZY_CALL, declared_exports

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("binio", "ckpt2pb", "atc_wrap", "infer")
ENTRY_POINTS = {"infer/__main__.py"}  # `python -m infer` runs the command line: the one module allowed to


def _import_names(node: ast.Import | ast.ImportFrom, module: str) -> set[str]:
    """The modules one import statement of `module` names, as dotted names; relative imports made absolute."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names}
    if node.level:
        package = module.split(".")[:-1]  # a module's package; for an __init__, its own
        prefix = ".".join(package[: len(package) - node.level + 1])
        name = f"{prefix}.{node.module}" if node.module else prefix
    else:
        name = node.module or ""
    # `from infer import cli` imports infer.cli: the names may be modules too; a name a package exports lazily
    # (`from infer.compare import compare_layers`) imports the module it lives in, there and then
    lazy = LAZY_EXPORTS.get(name, {})
    return {name} | {f"{name}.{alias.name}" for alias in node.names if alias.name != "*"} | {
        lazy[alias.name] for alias in node.names if alias.name in lazy}


def _lazy_exports() -> dict[str, dict[str, str]]:
    """Package -> {exported name: the module it lives in}, for each package that exports lazily: the
    ``TYPE_CHECKING`` imports `binio.exports.lazy_exports` reads."""
    found: dict[str, dict[str, str]] = {}
    for path in sorted(ROOT.glob("*/**/__init__.py")):
        source = path.read_text(encoding="utf-8")
        package = ".".join(path.parent.relative_to(ROOT).parts)
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Call) and ast.unparse(node.func) == LAZY_CALL:
                found[package] = {name: home for name, (home, _) in declared_exports(source, lazy=True).items()}
    return found


LAZY_EXPORTS = _lazy_exports()


def imported_modules(source: str, module: str) -> set[str]:
    """Every module `source` (the text of `module`) imports, as dotted names; relative imports made absolute."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found |= _import_names(node, module)
    return found


def _type_checking(node: ast.stmt) -> bool:
    return isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")


def import_time_modules(source: str, module: str, *, typing_too: bool = False) -> set[str]:
    """The modules `source` imports while it is itself imported: at module level (in a class body, an `if` or a
    `try` too), not inside a function; under `if TYPE_CHECKING:` only with `typing_too` (what a type checker
    imports: a cycle there is a cycle of the code's design all the same, and the next runtime import closes it)."""
    found: set[str] = set()
    todo: list[ast.AST] = [ast.parse(source)]
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found |= _import_names(node, module)
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and not (
                isinstance(node, ast.stmt) and _type_checking(node) and not typing_too):
            todo.extend(ast.iter_child_nodes(node))
        elif isinstance(node, ast.If):  # `if TYPE_CHECKING: ... else: ...`: the else branch runs
            todo.extend(node.orelse)
    return found


def module_level_modules(source: str, module: str) -> set[str]:
    """The modules `source` imports outside its functions, `if TYPE_CHECKING:` included."""
    return import_time_modules(source, module, typing_too=True)


def _package_imports(read: Callable[[str, str], set[str]] = imported_modules) -> dict[str, set[str]]:
    """Source file (relative to the repository) -> the modules it imports (as `read` sees them)."""
    imports: dict[str, set[str]] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT)
            module = ".".join(relative.with_suffix("").parts)
            imports[relative.as_posix()] = read(path.read_text(encoding="utf-8"), module)
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


def test_binio_imports_only_numpy_xxhash_and_the_standard_library() -> None:
    def allowed(name: str) -> bool:
        return _top(name) in sys.stdlib_module_names or _top(name) in ("numpy", "xxhash", "binio")

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


def test_ascend_files_are_read_with_nothing_else_of_atc_wrap() -> None:
    """atc_wrap.ascend_files (om, NPU dump, layouts) is a reader of formats: the converter's rooms build on it, never
    the other way round, so compare, run and bin-info reach it without ATC's command line or the stand-in."""
    assert _violations("atc_wrap/ascend_files/", lambda name: not _within(name, "atc_wrap")
                       or _within(name, "atc_wrap.ascend_files")) == []


def test_the_runners_reach_their_tools_without_the_converter_layer() -> None:
    """msame and ais_bench run through binio's subprocess wrapper: infer/run needs nothing of atc_wrap for it."""
    assert _violations("infer/run/", lambda name: not _within(name, "atc_wrap")) == []


def _module_name(path: str) -> str:
    """infer/run/options.py -> infer.run.options; infer/run/__init__.py -> infer.run."""
    return path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


def import_graph(imports: dict[str, set[str]]) -> dict[str, set[str]]:
    """Project module -> the project modules importing it runs: each one named and the packages above it (their
    __init__ runs first), but for the importer's own packages, which are being imported already."""
    modules = {_module_name(path) for path in imports}
    graph: dict[str, set[str]] = {}
    for path, names in imports.items():
        module = _module_name(path)
        own = {".".join(module.split(".")[:i]) for i in range(1, module.count(".") + 1)}
        runs = {".".join(name.split(".")[:i]) for name in names for i in range(1, name.count(".") + 2)}
        graph[module] = (runs & modules) - own - {module}
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (a -> b -> ... -> a) through each group of modules that import each other (Tarjan's strongly
    connected components), in a stable order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[set[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for other in sorted(graph.get(module, ())):
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            group = {stack.pop()}
            while module not in group:
                group.add(stack.pop())
            if len(group) > 1:
                groups.append(group)

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return [_cycle_in(graph, group) for group in sorted(groups, key=min)]


def _cycle_in(graph: dict[str, set[str]], group: set[str]) -> list[str]:
    """A shortest path from the group's first module back to itself, inside the group (breadth first)."""
    start = min(group)
    paths = {start: [start]}
    todo = [start]
    while todo:
        module = todo.pop(0)
        for other in sorted(graph[module] & group):
            if other == start:
                return [*paths[module], start]
            if other not in paths:
                paths[other] = [*paths[module], other]
                todo.append(other)
    raise AssertionError(f"no cycle through {start}")  # a strongly connected group always has one


@pytest.mark.slow
def test_no_import_cycle_among_the_projects_modules() -> None:
    """No module imports, outside its functions, one that imports it back (directly or around a longer loop), not
    even for types only (under TYPE_CHECKING): such a loop is two modules that need each other, whatever runs
    first. Imports inside functions are left out: they are what keeps `infer --help` from numpy."""
    cycles = import_cycles(import_graph(_package_imports(module_level_modules)))
    assert [" -> ".join(cycle) for cycle in cycles] == []


def test_the_cycle_check_sees_module_level_cycles_only() -> None:
    """The check can fail: a loop at module level is reported (relative imports and packages' __init__ too), one
    closed under TYPE_CHECKING too; one closed by an import inside a function is not."""
    sources = {
        "infer/a.py": "from infer import b\n",
        "infer/b.py": "from .c import name\n",
        "infer/c.py": "import infer.a\n",
        "infer/d.py": "import infer.e\n",
        "infer/e.py": "def f():\n    import infer.d\n",
        "infer/f.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import infer.g\n",
        "infer/g.py": "import infer.f\n",
        "infer/h/__init__.py": "",
        "infer/h/i.py": "try:\n    from infer.j import k\nexcept ImportError:\n    pass\n",
        "infer/j.py": "class K:\n    from infer.h import i\n",
    }
    imports = {path: module_level_modules(source, ".".join(Path(path).with_suffix("").parts))
               for path, source in sources.items()}
    assert import_cycles(import_graph(imports)) == [["infer.a", "infer.b", "infer.c", "infer.a"],
                                                    ["infer.f", "infer.g", "infer.f"],
                                                    ["infer.h.i", "infer.j", "infer.h.i"]]


def test_the_lazy_exports_were_read() -> None:
    assert LAZY_EXPORTS["infer.compare"]["compare_layers"] == "infer.compare._layers.stand_in"
    assert "infer.compare._layers.stand_in" in imported_modules("from infer.compare import compare_layers\n", "infer.x")
    assert LAZY_EXPORTS["infer.run"]["run_model"] == "infer.run._entry"  # binio.exports' form


def _private_of_another(path: str, name: str) -> bool:
    """Whether `name` is a module of infer's that starts with _ (a package's own) inside a package other than
    the one `path` is in: `infer/tune/_tune.py` importing `infer.compare._sides.golden`, say."""
    parts = name.split(".")
    if parts[0] != "infer" or len(parts) < 3 or not any(part.startswith("_") for part in parts[2:]):
        return False
    return not path.startswith(f"infer/{parts[1]}/")


@pytest.mark.slow
def test_no_stage_imports_another_stages_own_modules() -> None:
    """A stage reaches another through the names its package exports (`from infer.compare import ...`), never
    through the modules that package keeps to itself; the command line and the API's exports may."""
    written = [f"{path}: imports {node.module}" for path in IMPORTS if path.startswith("infer/")
               and not path.startswith("infer/cli/") and path != "infer/__init__.py"
               for node in ast.walk(ast.parse((ROOT / path).read_text(encoding="utf-8")))
               if isinstance(node, ast.ImportFrom) and node.module and _private_of_another(path, node.module)]
    assert written == []
    assert _private_of_another("infer/tune/_tune.py", "infer.compare._sides.golden")  # the check can fail
    assert not _private_of_another("infer/compare/_compare.py", "infer.compare._sides.golden")


# compare's rooms (docs/architecture.md, "Where `infer compare` lives") and the rooms each may import: the outline
# (`_compare`, `_gears`) imports them all, none imports it.
COMPARE_ROOMS = {"_sides": set(), "_judge": {"_sides"}, "_layers": {"_sides", "_judge"},
                 "_npu": {"_sides", "_judge", "_layers"}, "_reports": {"_sides", "_judge"}}


def _against_the_rooms_order(path: str, name: str) -> bool:
    """Whether `path`, a module in one of compare's rooms, importing `name` goes against their order: another room
    it may not import, or the outline. compare's public modules (options, results, thresholds...) are free to all."""
    parts, room = name.split("."), path.split("/")[2] if path.startswith("infer/compare/") else ""
    if room not in COMPARE_ROOMS or parts[:2] != ["infer", "compare"] or len(parts) < 3:
        return False
    other = parts[2]
    return other.startswith("_") and other != room and other not in COMPARE_ROOMS[room]


def test_compares_rooms_import_in_one_direction() -> None:
    assert {path.split("/")[2] for path in IMPORTS if path.startswith("infer/compare/_") and path.count("/") == 3} \
        == set(COMPARE_ROOMS)  # every room is named here
    assert [f"{path}: imports {name}" for path, names in IMPORTS.items() for name in sorted(names)
            if _against_the_rooms_order(path, name)] == []
    assert _against_the_rooms_order("infer/compare/_sides/golden.py", "infer.compare._judge.metrics")  # can fail
    assert _against_the_rooms_order("infer/compare/_judge/outputs.py", "infer.compare._compare")
    assert not _against_the_rooms_order("infer/compare/_npu/layers.py", "infer.compare._layers.conclusion")
    assert not _against_the_rooms_order("infer/compare/_sides/golden.py", "infer.compare.errors")
