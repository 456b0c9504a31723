"""The bottom layer: dtypes, tensor specs, .bin files, manifests and the error root. numpy only.

The names below are loaded on first use, not at import: `import binio.errors` (which every command does, for the
error root) must not pay numpy's start-up, or `infer --help` would.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from binio.exports import lazy_exports

if TYPE_CHECKING:  # the exports (binio/exports.py): type checkers read them here, lazy_exports on first use
    from binio.binfile import read_bin as read_bin
    from binio.binfile import sha256_file as sha256_file
    from binio.binfile import write_bin as write_bin
    from binio.dtypes import DTYPE_NAMES as DTYPE_NAMES
    from binio.dtypes import DType as DType
    from binio.dtypes import dtype as dtype
    from binio.errors import InferError as InferError
    from binio.spec import TensorSpec as TensorSpec
    from binio.spec import format_shape as format_shape
    from binio.spec import node_name as node_name
    from binio.spec import parse_shape as parse_shape
    from binio.spec import tensor_name as tensor_name

__getattr__, __dir__ = lazy_exports(__name__)
