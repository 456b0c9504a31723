"""Errors of reading Ascend's files: one that cannot be read as the kind of file it should be, and a layout that
cannot be turned back into the framework's."""

from __future__ import annotations

from binio.errors import InferError


class AscendFileError(InferError):
    """A file Ascend's tools wrote (an om, an NPU dump) that cannot be read: not that kind of file, truncated,
    encrypted or corrupt. The message names the file, what was expected there and what was found."""


class OmFileError(AscendFileError):
    """An .om file that is not one, is cut short, is encrypted, or holds a model that cannot be decoded."""


class NpuDumpError(AscendFileError):
    """An NPU dump file (or dump folder) that is not one, is cut short, or does not hold what it declares."""


class LayoutError(InferError):
    """An NPU tensor layout that cannot be turned back into the framework's: unknown, or inconsistent with the
    shapes given."""
