"""One dtype vocabulary for every stage: our names and their numpy, TensorFlow, ATC, ONNX, msaccucmp and GE spellings.

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
    ge: str  # GE's name (DT_FLOAT16, not TensorFlow's DT_HALF), as an om's `origin_data_type` attribute holds it
    # GE's DataType enum (ge_ir.proto; the same numbers in a dump's OutputDataType, dump_task.proto), which an om's
    # tensor descriptors and an NPU dump file store.
    ge_enum: int

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
    DType("float16", "float16", 19, "FP16", 10, "float16", "DT_FLOAT16", 2),
    DType("float32", "float32", 1, "FP32", 1, "float32", "DT_FLOAT", 1),
    DType("float64", "float64", 2, "DOUBLE", 11, "float64", "DT_DOUBLE", 12),
    DType("int8", "int8", 6, "INT8", 3, "int8", "DT_INT8", 3),
    DType("int16", "int16", 5, "INT16", 5, "int16", "DT_INT16", 5),
    DType("int32", "int32", 3, "INT32", 6, "int32", "DT_INT32", 7),
    DType("int64", "int64", 9, "INT64", 7, "int64", "DT_INT64", 8),
    DType("uint8", "uint8", 4, "UINT8", 2, "uint8", "DT_UINT8", 4),
    DType("uint16", "uint16", 17, "UINT16", 4, "uint16", "DT_UINT16", 6),
    DType("uint32", "uint32", 22, "UINT32", 12, "uint32", "DT_UINT32", 9),
    DType("uint64", "uint64", 23, "UINT64", 13, "uint64", "DT_UINT64", 10),
    DType("bool", "bool", 10, "BOOL", 9, "bool", "DT_BOOL", 11),
)

_BY_NAME = {d.name: d for d in _TABLE}
# The largest finite float16 (numpy.finfo(numpy.float16).max): past it an fp16 tensor holds inf. The compare side
# counts values beyond it, the AIPP side keeps var_reci_chn within it (AIPP stores it as fp16).
FP16_MAX = 65504.0
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


# GE's DataType values outside the table, by GE's name less its DT_ prefix, lower-cased (ge_ir.proto, DataType): an
# om or a dump may hold them; they are named, not read.
_GE_OTHER_NAMES = {0: "undefined", 13: "string", 14: "dual_sub_int8", 15: "dual_sub_uint8", 16: "complex64",
                   17: "complex128", 18: "qint8", 19: "qint16", 20: "qint32", 21: "quint8", 22: "quint16",
                   23: "resource", 24: "string_ref", 25: "dual", 26: "variant", 27: "bfloat16", 28: "int4"}


def from_ge_enum(value: int) -> DType:
    """The entry for a GE ``DataType`` value (an om's tensor descriptor, a dump file's data_type)."""
    for entry in _TABLE:
        if entry.ge_enum == value:
            return entry
    raise DtypeError(f"GE dtype {ge_dtype_name(value)} ({value}) is not supported: expected one of "
                     f"{', '.join(DTYPE_NAMES)}")


def from_ge_name(name: str) -> DType:
    """The entry for GE's spelling of a dtype (``DT_FLOAT``), as an om's `origin_data_type` attribute holds it."""
    for entry in _TABLE:
        if entry.ge == name:
            return entry
    raise DtypeError(f"GE dtype {name!r} is not supported: expected one of {', '.join(DTYPE_NAMES)}")


def ge_dtype_name(value: int) -> str:
    """A GE ``DataType`` value as a name: ours where the table has it (``float32``), else GE's own lower-cased
    (``bfloat16``, ``string``), else ``ge_dtype_<value>``; for showing what a file holds, never failing."""
    for entry in _TABLE:
        if entry.ge_enum == value:
            return entry.name
    return _GE_OTHER_NAMES.get(value, f"ge_dtype_{value}")


def from_onnx(value: int) -> DType:
    """The entry for an ONNX ``TensorProto.DataType`` value."""
    for entry in _TABLE:
        if entry.onnx == value:
            return entry
    raise DtypeError(f"ONNX element type {value} is not supported: expected one of {', '.join(DTYPE_NAMES)}")
