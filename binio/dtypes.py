"""One dtype vocabulary for every stage: our names and their numpy, TensorFlow, ATC, ONNX and msaccucmp spellings.

The one place a dtype is spelled: other packages look names up here rather than keep their own tables."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from binio.errors import DtypeError


@dataclass(frozen=True)
class DType:
    """A tensor element type under each of the names the pipeline's tools give it."""

    name: str
    numpy: str
    tf_enum: int  # tensorflow.core.framework.types_pb2.DataType; kept numeric so binio never imports TF
    atc: str
    onnx: int  # onnx.TensorProto.DataType
    # The DataType cell of msaccucmp's CSV: the dtype of the array it compared, as numpy names it (mindstudio-probe
    # 26.2.0, vector_cmp/fusion_manager/compare_result.py, FusionOpComResult.get_result: str(array.dtype)).
    msaccucmp: str

    @property
    def np_dtype(self) -> np.dtype:
        # Bins are little-endian whatever the host, as msame and ais_bench read them.
        return np.dtype(self.numpy).newbyteorder("<")

    @property
    def itemsize(self) -> int:
        return np.dtype(self.numpy).itemsize

    @property
    def is_float(self) -> bool:
        return np.dtype(self.numpy).kind == "f"

    @property
    def is_integer(self) -> bool:
        return np.dtype(self.numpy).kind in "iu"

    @property
    def is_bool(self) -> bool:
        return np.dtype(self.numpy).kind == "b"


_TABLE: tuple[DType, ...] = (
    DType("float16", "float16", 19, "FP16", 10, "float16"),
    DType("float32", "float32", 1, "FP32", 1, "float32"),
    DType("float64", "float64", 2, "DOUBLE", 11, "float64"),
    DType("int8", "int8", 6, "INT8", 3, "int8"),
    DType("int16", "int16", 5, "INT16", 5, "int16"),
    DType("int32", "int32", 3, "INT32", 6, "int32"),
    DType("int64", "int64", 9, "INT64", 7, "int64"),
    DType("uint8", "uint8", 4, "UINT8", 2, "uint8"),
    DType("uint16", "uint16", 17, "UINT16", 4, "uint16"),
    DType("uint32", "uint32", 22, "UINT32", 12, "uint32"),
    DType("uint64", "uint64", 23, "UINT64", 13, "uint64"),
    DType("bool", "bool", 10, "BOOL", 9, "bool"),
)

_BY_NAME = {d.name: d for d in _TABLE}
_ALIASES = {"fp16": "float16", "half": "float16", "fp32": "float32", "float": "float32", "fp64": "float64",
            "double": "float64"}
DTYPE_NAMES: tuple[str, ...] = tuple(d.name for d in _TABLE)


def dtype(name: str, *, what: str | None = None) -> DType:
    """Looks a dtype up by our name (``float16``), an alias (``fp16``) or its ATC name (``FP16``).

    `what` names where the name came from (``--dtype``) in the refusal of an unknown one.
    """
    key = name.strip()
    found = _BY_NAME.get(_ALIASES.get(key.lower(), key.lower()))
    if found is None:
        found = next((d for d in _TABLE if d.atc == key.upper()), None)
    if found is None:
        where = f"{what} {name!r}: unknown dtype" if what else f"unknown dtype {name!r}"
        raise DtypeError(f"{where}: expected one of {', '.join(DTYPE_NAMES)}")
    return found


def from_numpy(value: np.dtype | type | str) -> DType:
    """The entry for a numpy dtype; unsupported kinds (strings, objects, complex) are refused by name."""
    np_dtype = np.dtype(value)
    for entry in _TABLE:
        if np.dtype(entry.numpy) == np_dtype.newbyteorder("="):
            return entry
    raise DtypeError(f"numpy dtype {np_dtype} has no tensor dtype here: expected one of {', '.join(DTYPE_NAMES)}")


def from_tf_enum(value: int) -> DType:
    """The entry for a TensorFlow ``DataType`` enum value (reference types, enum + 100, map to their base)."""
    base = value - 100 if value > 100 else value
    for entry in _TABLE:
        if entry.tf_enum == base:
            return entry
    raise DtypeError(f"TensorFlow dtype enum {value} is not supported: expected one of {', '.join(DTYPE_NAMES)}")


def from_onnx(value: int) -> DType:
    """The entry for an ONNX ``TensorProto.DataType`` value."""
    for entry in _TABLE:
        if entry.onnx == value:
            return entry
    raise DtypeError(f"ONNX element type {value} is not supported: expected one of {', '.join(DTYPE_NAMES)}")
