"""The TensorFlow side: loading checkpoints, SavedModels and Keras files, inspecting and freezing graphs."""
