"""Errors of the converter side: a conversion that cannot start, or one that ran and failed. (Ascend's files that
cannot be read raise `atc_wrap.ascend_files.errors`'.)"""

from __future__ import annotations

from binio.errors import InferError


class ConvertError(InferError):
    """A conversion refused before it ran (bad option, node not in the graph) or one that failed."""
