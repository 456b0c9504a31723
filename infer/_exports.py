"""The old form of a package's lazy exports (PEP 562), written three times: the ``TYPE_CHECKING`` imports, ``__all__``
and the map given here. Left only for infer.compare, infer.convert, infer.om and infer.aipp, whose files are being
moved: each takes `binio.exports`' form (the imports, once) the same way the other packages did, and then this module
goes.
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
