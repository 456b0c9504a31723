"""What `infer tune-precision` refuses."""

from __future__ import annotations

from binio.errors import InferError


class TuneError(InferError):
    """Options or a model `infer tune-precision` cannot work with."""
