"""`infer inspect`: what a model source, an Ascend om or a converted model.json holds, read and returned as a value
(the command line prints it)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from binio.exports import lazy_exports

if TYPE_CHECKING:  # the exports (binio/exports.py): type checkers read them here, lazy_exports on first use
    from infer.inspect._inspect import inspect_path as inspect_path
    from infer.inspect.errors import InspectError as InspectError
    from infer.inspect.options import InspectOptions as InspectOptions
    from infer.inspect.result import InspectResult as InspectResult


__getattr__, __dir__ = lazy_exports(__name__)
