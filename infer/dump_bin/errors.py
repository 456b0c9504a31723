"""What `infer dump-bin` refuses, by kind (each an InferError naming the file, input or option)."""

from __future__ import annotations

from binio.errors import InferError


class SourceError(InferError):
    """A dataset source that cannot be read as the samples of a model input."""


class LossyCastError(InferError):
    """Values that do not survive the cast to the model's dtype, refused without --allow-lossy."""
