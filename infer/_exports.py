"""A package's public names, imported on first use (PEP 562).

A package's ``__init__`` lists what it exports and the private module each lives in; importing the package, or a
light module of it such as its ``options``, then loads none of its heavy modules (numpy, TensorFlow), which keeps
``infer --help`` fast. Type checkers see the names through the package's ``TYPE_CHECKING`` imports, which
tests/test_api.py holds equal to the list.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for `package`, whose name N is ``exports[N]``: ``"module"`` (N there) or
    ``"module:other"`` (exported as N). A name is imported once and kept in the package's namespace."""

    def __getattr__(name: str) -> Any:
        try:
            where = exports[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        module, _, attribute = where.partition(":")
        value = getattr(importlib.import_module(module), attribute or name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *exports})

    return __getattr__, __dir__
