"""Keeps TensorFlow's start-up chatter off the user's terminal unless they ask for it with -v/-vv.

TensorFlow's C++ side prints its oneDNN notice and an absl warning while it is imported, before absl reads
TF_CPP_MIN_LOG_LEVEL, so the variable alone does not silence them: only pointing file descriptor 2 elsewhere
while `import tensorflow` runs does. Python exceptions raised by that import still reach the user, as they are
raised after the descriptor is restored. tf2onnx repeats our own unsupported-op errors in its log, so it is
quieted too.
"""

from __future__ import annotations

import contextlib
import importlib.machinery
import logging
import os
import sys
from collections.abc import Iterator, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    import importlib.abc  # its import pulls importlib.resources, tempfile and random: a few ms of every command

from ckpt2pb.logs import quiet_tensorflow_logs

_NOISY = "tensorflow"


@contextlib.contextmanager
def _stderr_fd_silenced() -> Iterator[None]:
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "wb") as devnull:
            os.dup2(devnull.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


class _QuietLoader:
    """A loader (duck-typed, as the import system takes them) that runs another one with fd 2 silenced."""

    def __init__(self, loader: importlib.abc.Loader) -> None:
        self._loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        with _stderr_fd_silenced():
            self._loader.exec_module(module)


class _QuietTensorFlowFinder:
    """Wraps the loader of the top-level `tensorflow` package, once, the first time it is imported."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != _NOISY:
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is not None and spec.loader is not None:
            spec.loader = cast("importlib.abc.Loader", _QuietLoader(spec.loader))
        return spec


def quiet_frameworks(verbosity: int) -> None:
    """At verbosity 0 silence TensorFlow's import chatter and its Python warnings; -v lets the Python logs
    through; -vv shows everything, C++ lines included."""
    if verbosity >= 2:
        return
    quiet_tensorflow_logs(python_logs=verbosity == 0)
    if _NOISY not in sys.modules and not any(isinstance(f, _QuietTensorFlowFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _QuietTensorFlowFinder())
    if verbosity == 0:
        logging.getLogger("tf2onnx").setLevel(logging.CRITICAL)
