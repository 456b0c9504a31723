"""The TensorFlow side: loading checkpoints, SavedModels and Keras files, inspecting and freezing graphs."""

from ckpt2pb.logs import quiet_tensorflow_logs as _quiet_tensorflow_logs

_quiet_tensorflow_logs()
