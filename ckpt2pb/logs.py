"""TensorFlow's log level: the one place it is set, for the library, the runners and the command line alike."""

from __future__ import annotations

import logging
import os
from collections.abc import MutableMapping

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
