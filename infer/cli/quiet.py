"""Keeps TensorFlow's start-up chatter off the user's terminal unless they ask for it with -v/-vv (the silencing
itself is ckpt2pb.logs'). tf2onnx repeats our own unsupported-op errors in its log, so it is quieted too."""

from __future__ import annotations

import logging

from ckpt2pb.logs import quiet_tensorflow_import, quiet_tensorflow_logs


def quiet_frameworks(verbosity: int) -> None:
    """At verbosity 0 silence TensorFlow's import chatter and its Python warnings; -v lets the Python logs
    through; -vv shows everything, C++ lines included."""
    if verbosity >= 2:
        return
    quiet_tensorflow_logs(python_logs=verbosity == 0)
    quiet_tensorflow_import()
    if verbosity == 0:
        logging.getLogger("tf2onnx").setLevel(logging.CRITICAL)
