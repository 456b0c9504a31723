"""The dtype table: one entry per name, and each of its spellings leads back to it."""

from __future__ import annotations

import numpy as np
import pytest

from binio.dtypes import (
    DTYPE_NAMES,
    dtype,
    from_ge_enum,
    from_ge_name,
    from_numpy,
    from_onnx,
    from_tf_enum,
    ge_dtype_name,
)
from binio.errors import DtypeError, InferError


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_every_name_maps_back_from_each_spelling(name: str) -> None:
    entry = dtype(name)
    assert entry.name == name
    assert dtype(entry.atc) is entry
    assert from_numpy(np.dtype(entry.numpy)) is entry
    assert from_tf_enum(entry.tf_enum) is entry
    assert from_onnx(entry.onnx) is entry


def test_spellings_match_tensorflow_and_onnx_enums() -> None:
    import onnx
    import tensorflow as tf

    for name in DTYPE_NAMES:
        entry = dtype(name)
        assert tf.as_dtype(entry.tf_enum).name == name
        assert onnx.helper.tensor_dtype_to_np_dtype(entry.onnx) == np.dtype(entry.numpy)


@pytest.mark.parametrize(("alias", "name"), [("fp16", "float16"), ("FP16", "float16"), ("half", "float16"),
                                              ("float", "float32"), ("FP32", "float32"), ("double", "float64"),
                                              (" INT32 ", "int32"), ("UINT8", "uint8")])
def test_aliases_and_atc_names(alias: str, name: str) -> None:
    assert dtype(alias).name == name


def test_unknown_name_lists_the_valid_ones() -> None:
    with pytest.raises(DtypeError) as caught:
        dtype("float8")
    assert str(caught.value) == (
        "unknown dtype 'float8': expected one of float16, float32, float64, int8, int16, int32, int64, uint8, "
        "uint16, uint32, uint64, bool"
    )
    assert isinstance(caught.value, InferError)


def test_reference_tf_enum_maps_to_its_base() -> None:
    assert from_tf_enum(101).name == "float32"  # DT_FLOAT_REF


def test_unsupported_numpy_dtype_is_refused_by_name() -> None:
    with pytest.raises(DtypeError, match="numpy dtype complex64 has no tensor dtype here"):
        from_numpy(np.complex64)


def test_properties() -> None:
    assert dtype("float16").itemsize == 2 and dtype("float16").is_float
    assert dtype("uint8").is_integer and not dtype("uint8").is_float
    assert dtype("int64").np_dtype.byteorder in ("<", "=")
    assert dtype("int64").np_dtype.newbyteorder("<") == dtype("int64").np_dtype


def test_first_line_of_a_foreign_error() -> None:
    from binio.errors import first_line

    assert first_line(ValueError("Graph execution error:\n\n  long trace\n")) == "Graph execution error:"
    assert first_line(ValueError("")) == "ValueError"
    assert first_line(RuntimeError("  \n"), default="") == ""
    assert dtype("bool").is_bool and not dtype("bool").is_integer and not dtype("uint8").is_bool


def test_msaccucmp_spells_a_dtype_as_numpy_names_the_array() -> None:
    # mindstudio-probe 26.2.0 writes str(array.dtype): "float32", not TensorFlow's DT_FLOAT (the CSV msaccucmp
    # writes in tests/infer/compare/test_msaccucmp_golden.py shows it).
    assert [dtype(n).msaccucmp for n in ("float32", "float16", "int32", "bool")] == [
        "float32", "float16", "int32", "bool"]
    assert all(dtype(name).msaccucmp == str(np.zeros(1, dtype(name).np_dtype).dtype) for name in DTYPE_NAMES)


def test_ges_datatype_numbers() -> None:
    """ge_ir.proto's DataType (and a dump's OutputDataType): DT_FLOAT 1, DT_FLOAT16 2, DT_INT8 3, DT_UINT8 4,
    DT_INT16 5, DT_UINT16 6, DT_INT32 7, DT_INT64 8, DT_UINT32 9, DT_UINT64 10, DT_BOOL 11, DT_DOUBLE 12."""
    assert [from_ge_enum(n).name for n in range(1, 13)] == [
        "float32", "float16", "int8", "uint8", "int16", "uint16", "int32", "int64", "uint32", "uint64", "bool",
        "float64"]
    assert from_ge_name("DT_FLOAT16").name == "float16"


def test_ge_types_outside_the_table_are_named_and_refused_for_reading() -> None:
    assert (ge_dtype_name(27), ge_dtype_name(13), ge_dtype_name(999)) == ("bfloat16", "string", "ge_dtype_999")
    with pytest.raises(DtypeError, match=r"GE dtype bfloat16 \(27\) is not supported"):
        from_ge_enum(27)
    with pytest.raises(DtypeError, match="GE dtype 'DT_BF16' is not supported"):
        from_ge_name("DT_BF16")
    assert from_ge_name("DT_FLOAT").ge == "DT_FLOAT" and dtype("float16").ge == "DT_FLOAT16"
