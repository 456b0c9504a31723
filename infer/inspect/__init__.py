"""`infer inspect`: what a model source, an Ascend om or a converted model.json holds, read and returned as a value
(the command line prints it)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from infer._exports import lazy_exports

if TYPE_CHECKING:
    from infer.inspect._inspect import inspect_path
    from infer.inspect.errors import InspectError
    from infer.inspect.options import InspectOptions
    from infer.inspect.result import InspectResult

__all__ = [
    "InspectError", "InspectOptions", "InspectResult", "inspect_path",
]

__getattr__, __dir__ = lazy_exports(__name__, {
    "InspectError": "infer.inspect.errors",
    "InspectOptions": "infer.inspect.options",
    "InspectResult": "infer.inspect.result",
    "inspect_path": "infer.inspect._inspect",
})
