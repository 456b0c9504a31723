"""The steps of a long stage, as the stage names them for whoever watches (infer freeze and convert on a
terminal): a callback given each step's description as it starts."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeAlias

OnStep: TypeAlias = Callable[[str], None]
"""Called with what the stage starts doing now (``restoring the variables``); a stage calls it before each step
that may take seconds on a real model, never per tensor or per op."""


def no_steps(step: str) -> None:
    """The default: nobody watches."""
