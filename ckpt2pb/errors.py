"""The errors the TensorFlow side raises for a user's mistake: all of them `InferError`s."""

from __future__ import annotations

from binio.errors import InferError, OutputExistsError


class SourceError(InferError):
    """A model source that is missing, of an unknown kind, or unreadable (corrupt checkpoint, bad protobuf)."""


class GraphNameError(InferError):
    """A node or tensor name that is not in the graph."""


class FreezeError(InferError):
    """A graph that cannot be frozen as asked: a placeholder left, a dim unknown, a conflicting spec."""


class UnsetSwitchError(FreezeError):
    """A bool switch (is_training) the outputs need, neither an input nor fixed: the fix is a `--set`, which
    each front end spells its own way (the CLI's flag, the pipeline's TOML)."""

    def __init__(self, message: str, *, placeholder: str) -> None:
        super().__init__(message, hint=f"fix it with --set {placeholder}=false (or true)")
        self.placeholder = placeholder


class VerifyError(InferError):
    """A frozen graph whose outputs differ from the original graph's beyond tolerance."""


_TF_NOISE = ("Graph execution error", "Detected at node", "File ", "Node:", "[[", "Original stack trace",
             "Restoring from checkpoint failed", "Original error")


def tensorflow_reason(message: str) -> str:
    """The line of a TensorFlow error message that says what went wrong, without its node and stack lines."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    return next((line for line in lines if not line.startswith(_TF_NOISE)), lines[0] if lines else "")


__all__ = ["FreezeError", "GraphNameError", "InferError", "OutputExistsError", "SourceError", "UnsetSwitchError",
           "VerifyError", "tensorflow_reason"]
