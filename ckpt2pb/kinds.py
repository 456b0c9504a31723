"""The kinds of model source freeze and inspect read (model.json records one), in a module of their own so that
the contract names them without loading the readers."""

from __future__ import annotations

from typing import Literal

from binio.vocabulary import values_of

SourceKind = Literal["checkpoint", "meta", "pb", "saved_model", "keras"]
KINDS: tuple[str, ...] = values_of(SourceKind)
