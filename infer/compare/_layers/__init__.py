"""Layer by layer, on one batch: TensorFlow's intermediate tensors against the ONNX stand-in's (which tensor of the
converted graph stands for which, in which layout), each tensor's expected-error band, the diagnosis (where the
error jumps, where it grows most, the first inf/NaN and its cause), and TF's tensors as msaccucmp's golden files.
The NPU dump's comparison (`infer.compare._npu`) makes its own rows and ends as the stand-in's does (`conclusion`).

Nothing is imported here: each module is imported where it is used.
"""
