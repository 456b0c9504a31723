"""What the om's own descriptors refuse: an om whose inputs or outputs are not the frozen pb's (`OmMismatchError`),
and bins the om cannot take (`OmBinsError`); an om that cannot be read at all is atc_wrap's `OmFileError`."""

from __future__ import annotations

from atc_wrap.ascend_files.errors import OmFileError
from binio.errors import InferError

__all__ = ["OmBinsError", "OmFileError", "OmMismatchError"]


class OmMismatchError(InferError):
    """An om whose inputs or outputs differ from the frozen pb's by name, shape or dtype."""


class OmBinsError(InferError):
    """Bins that do not fit what the om's own input descriptors say it takes (dtype, shape, batch, gears)."""
