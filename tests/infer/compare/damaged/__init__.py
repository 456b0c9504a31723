"""A corpus of damaged conversions for judging `infer compare --layerwise` (issue 29): five model families, each
frozen and converted once per precision mode, and damages applied to the converted ONNX model at a named layer.
`cases.py` is the interface (the cases, and building one); `measure.py` prints how the diagnosis does on them."""
