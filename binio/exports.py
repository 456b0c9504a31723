"""A package's public names, written once: as the ``from M import X as X`` lines of its ``__init__``.

A package whose ``__init__`` may import its modules at once (nothing light of it is imported on its own) does so
at module level, and that is all. A package that must stay light when one of its modules is imported (its
``options``, which the command line imports for ``--help``; ``binio.errors``; ``import infer`` itself) writes the
same lines under ``if TYPE_CHECKING:``, where type checkers read them, and ends with::

    __getattr__, __dir__ = lazy_exports(__name__)

which reads those lines from the package's source the first time a name is asked for (PEP 562) and imports that
name's module then: importing the package costs nothing, and there is no second list to keep equal to the first.
``__all__`` is answered from the same lines. tests/test_api.py holds every package to one of the two shapes.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

# In a package's namespace, the name that marks it lazy: tests/test_api.py and tests/test_layers.py find the
# packages by this call.
LAZY_CALL = "lazy_exports"


def declared_exports(source: str, *, lazy: bool) -> dict[str, tuple[str, str]]:
    """Exported name -> (module, name there), from the ``from M import X as X`` lines of an ``__init__``'s
    `source`: under its module-level ``if TYPE_CHECKING:`` where `lazy`, at module level otherwise. A name that
    starts with ``_`` is the package's own, not an export."""
    import ast

    tree = ast.parse(source)
    if lazy:
        body = next((node.body for node in tree.body
                     if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"), [])
    else:
        body = tree.body
    return {alias.asname: (node.module, alias.name)
            for node in body if isinstance(node, ast.ImportFrom) and node.module and node.level == 0
            for alias in node.names if alias.asname is not None and not alias.asname.startswith("_")}


def lazy_exports(package: str) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for `package`, whose exports are the ``from M import X as X`` lines under
    its ``if TYPE_CHECKING:``. A name is imported once and kept in the package's namespace."""
    exports: dict[str, tuple[str, str]] = {}

    def declared() -> dict[str, tuple[str, str]]:
        if not exports:  # read on first use: `import package` reads nothing
            module = sys.modules[package]
            exports.update(declared_exports(Path(str(module.__file__)).read_text(encoding="utf-8"), lazy=True))
        return exports

    def __getattr__(name: str) -> Any:
        if name == "__all__":
            value: Any = sorted(declared())
        else:
            try:
                home, attribute = declared()[name]
            except KeyError:
                raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
            value = getattr(importlib.import_module(home), attribute)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *declared()})

    return __getattr__, __dir__
