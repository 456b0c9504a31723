"""TensorFlow's log level: the one place it is set, for the library, the runners and the command line alike.

TensorFlow's C++ side prints its oneDNN notice and an absl warning while it is imported, before absl reads
TF_CPP_MIN_LOG_LEVEL, so the variable alone does not silence them: only pointing file descriptor 2 elsewhere
while `import tensorflow` runs does (`quiet_tensorflow_import`). Python exceptions raised by that import still
reach the caller, as they are raised after the descriptor is restored.
"""

from __future__ import annotations

import contextlib
import importlib.machinery
import logging
import os
import sys
from collections.abc import Iterator, MutableMapping, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    import importlib.abc  # its import pulls importlib.resources, tempfile and random: a few ms of every command

_NOISY = "tensorflow"

# TensorFlow's C++ side: 0 all, 1 no INFO, 2 no WARNING, 3 no ERROR. At 2 its warnings are gone and its real
# errors still come through. The oneDNN notice it prints while starting, before it reads the level, is kept off the
# terminal by the command line (infer/cli/quiet.py); -vv shows it.
TF_CPP_MIN_LOG_LEVEL = "2"


def quiet_tensorflow_environment(env: MutableMapping[str, str]) -> None:
    """Sets the level in `env` (this process's, or a subprocess's), unless the user set one there."""
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", TF_CPP_MIN_LOG_LEVEL)


def quiet_tensorflow_logs(*, python_logs: bool = True) -> None:
    """Keeps TensorFlow's chatter from burying the one line a user needs. A level the user set in the environment
    wins. `python_logs`: also silence TensorFlow's Python warnings (its deprecation notes for the TF1 API this
    package uses on purpose) below ERROR."""
    quiet_tensorflow_environment(os.environ)
    if python_logs:
        logging.getLogger("tensorflow").setLevel(logging.ERROR)


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


def quiet_tensorflow_import() -> None:
    """The first `import tensorflow` from now on runs with fd 2 silenced (its oneDNN and absl lines), unless
    TensorFlow is imported already or the silencing is in place."""
    if _NOISY not in sys.modules and not any(isinstance(f, _QuietTensorFlowFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _QuietTensorFlowFinder())
