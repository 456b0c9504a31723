"""`infer run`: one entry, `run` (entry.py), which takes the plain path (plain.py: one batch loop over a runner) or,
asked for shards, the sharded one (sharded.py: shards over devices or Ray). docs/architecture.md maps the modules.

`run` is imported on first use (PEP 562), so importing a light module of this package (options.py) costs no numpy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from infer.run.entry import run

__all__ = ["run"]


def __getattr__(name: str) -> Any:
    if name != "run":
        raise AttributeError(f"module 'infer.run' has no attribute {name!r}")
    from infer.run.entry import run as entry

    globals()["run"] = entry
    return entry
