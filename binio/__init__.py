"""The bottom layer: dtypes, tensor specs, .bin files, manifests and the error root. numpy only."""

from binio.binfile import read_bin, sha256_file, write_bin
from binio.dtypes import DTYPE_NAMES, DType, dtype
from binio.errors import InferError
from binio.spec import TensorSpec, format_shape, node_name, parse_shape, tensor_name

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
