"""infer's version: the one place it is written (pyproject reads it, `infer --version`, doctor, run records and
the compare reports show it). A module of its own, so what needs the version imports nothing else of infer."""

__version__ = "0.1.0"
