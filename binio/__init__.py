"""The bottom layer: dtypes, tensor specs, .bin files, manifests and the error root. numpy only.

The names below are loaded on first use, not at import: `import binio.errors` (which every command does, for the
error root) must not pay numpy's start-up, or `infer --help` would.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from binio.binfile import read_bin, sha256_file, write_bin
    from binio.dtypes import DTYPE_NAMES, DType, dtype
    from binio.errors import InferError
    from binio.spec import TensorSpec, format_shape, node_name, parse_shape, tensor_name

_HOMES = {
    "DTYPE_NAMES": "binio.dtypes",
    "DType": "binio.dtypes",
    "InferError": "binio.errors",
    "TensorSpec": "binio.spec",
    "dtype": "binio.dtypes",
    "format_shape": "binio.spec",
    "node_name": "binio.spec",
    "parse_shape": "binio.spec",
    "read_bin": "binio.binfile",
    "sha256_file": "binio.binfile",
    "tensor_name": "binio.spec",
    "write_bin": "binio.binfile",
}

__all__ = [
    "DTYPE_NAMES",
    "DType",
    "InferError",
    "TensorSpec",
    "dtype",
    "format_shape",
    "node_name",
    "parse_shape",
    "read_bin",
    "sha256_file",
    "tensor_name",
    "write_bin",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'binio' has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)
