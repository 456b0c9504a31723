"""What `infer inspect` refuses (besides what the readers it calls refuse: a source that cannot be loaded, an om
that cannot be read, a model.json that is not one)."""

from __future__ import annotations

from binio.errors import InferError


class InspectError(InferError):
    """A model.json asked for its precision plan that has none."""
