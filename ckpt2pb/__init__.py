"""The TensorFlow side: loading checkpoints, SavedModels and Keras files, inspecting and freezing graphs."""

import logging as _logging
import os as _os

# TensorFlow's C++ start-up chatter (oneDNN notes, CPU feature lines) and its deprecation warnings for the TF1
# API this package uses on purpose would bury the one line a user needs; real errors still come through.
_os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
_logging.getLogger("tensorflow").setLevel(_logging.ERROR)
