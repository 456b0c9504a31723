"""What the tests build, one of each: graphs (`graphs.py`: TF1 graphs built by a function of `tf`), frozen models and
their contracts (`frozen.py`: model.pb + model.json), and datasets of bins (`bins.py`: .bin files + dataset.json).

Checkpoints of the models users bring live in tests/models.py (and tests/field_models.py), the shared session
fixtures in tests/conftest.py.
"""
