"""The ONNX stand-in: the frozen pb converted by tf2onnx (deterministic names, the opset), and ATC's precision
emulated on it op by op as the precision plan says."""
