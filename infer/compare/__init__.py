"""`infer compare`: the converted model against TensorFlow, with Ascend's accuracy metrics."""
