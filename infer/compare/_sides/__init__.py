"""Reading the two sides: run folders in msame's layout batch by batch, a tool's own output folder, TensorFlow's
golden run (computed once, cached), and the provenance of each side (backend, model, sha256, precision mode).

Nothing is imported here: each module is imported where it is used.
"""
