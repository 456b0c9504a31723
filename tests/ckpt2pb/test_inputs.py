"""The --inputs and --set syntax: unambiguous next to tensor names such as IteratorGetNext:0."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from binio.dtypes import DTYPE_NAMES
from binio.errors import DtypeError, ShapeError
from ckpt2pb.errors import FreezeError
from ckpt2pb.inputs import InputRequest, parse_assignment, parse_input, parse_inputs, parse_value


@pytest.mark.parametrize(("text", "name", "shape", "dtype"), [
    ("images", "images", None, None),
    ("images:0", "images:0", None, None),
    ("IteratorGetNext:0[?,224,224,3]:float32", "IteratorGetNext:0", (None, 224, 224, 3), "float32"),
    ("input_ids:0[8,128]:int32", "input_ids:0", (8, 128), "int32"),
    ("x[1,2]", "x", (1, 2), None),
    ("a:INT32", "a", None, "int32"),
    ("bert/encoder/out:1:fp16", "bert/encoder/out:1", None, "float16"),
    ("scalar[]", "scalar", (), None),
])
def test_parse_input(text: str, name: str, shape: tuple[int | None, ...] | None, dtype: str | None) -> None:
    assert parse_input(text) == InputRequest(name=name, shape=shape, dtype=dtype, text=text)


def test_commas_inside_brackets_do_not_split() -> None:
    names = [r.name for r in parse_inputs("a[1,2],IteratorGetNext:1[3,4]:int64, c")]
    assert names == ["a", "IteratorGetNext:1", "c"]


def test_wrong_dtype_name_lists_the_valid_ones() -> None:
    with pytest.raises(DtypeError) as caught:
        parse_input("images:0[2,8,8,3]:flaot32")
    assert str(caught.value) == "--inputs 'images:0[2,8,8,3]:flaot32': unknown dtype 'flaot32': expected one of " \
                                "float16, float32, float64, int8, int16, int32, int64, uint8, uint16, uint32, " \
                                "uint64, bool"


def test_bad_shape_and_bad_form() -> None:
    with pytest.raises(ShapeError, match=r"found 'x'"):
        parse_input("images[2,x]")
    with pytest.raises(FreezeError, match=r"expected NAME, NAME\[DIMS\] or NAME\[DIMS\]:DTYPE"):
        parse_input("images[2,3")


def test_assignments_and_values() -> None:
    assert parse_assignment("is_training = false") == ("is_training", "false")
    assert parse_value("False", "bool", what="--set a") is False
    assert parse_value("3", "int32", what="--set a") == 3
    assert parse_value("0.5", "float32", what="--set a") == 0.5
    with pytest.raises(FreezeError, match=r"--set is_training: 'maybe' is not a bool"):
        parse_value("maybe", "bool", what="--set is_training")
    with pytest.raises(FreezeError, match=r"expected NAME=VALUE"):
        parse_assignment("is_training")
    with pytest.raises(FreezeError) as caught:
        parse_value("99999999999", "int32", what="--set labels")
    assert str(caught.value) == "--set labels: 99999999999 is out of range for int32 (-2147483648 to 2147483647)"
    with pytest.raises(FreezeError) as caught:
        parse_value("1.5", "int32", what="--set labels")
    assert str(caught.value) == "--set labels: '1.5' is not an int32 value"


_names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_/.\-]{0,20}(:[0-9]{1,2})?", fullmatch=True)
_dims = st.lists(st.one_of(st.none(), st.integers(0, 4096)), max_size=5)


@pytest.mark.slow
@given(name=_names, shape=st.one_of(st.none(), _dims.map(tuple)), dtype_name=st.one_of(st.none(),
                                                                                    st.sampled_from(DTYPE_NAMES)))
def test_written_form_parses_back(name: str, shape: tuple[int | None, ...] | None, dtype_name: str | None) -> None:
    text = name + ("" if shape is None else "[" + ",".join("?" if d is None else str(d) for d in shape) + "]") + \
        ("" if dtype_name is None else f":{dtype_name}")
    assert parse_input(text) == InputRequest(name=name, shape=shape, dtype=dtype_name, text=text)
    assert parse_inputs(f"{text},{text}") == (parse_input(text), parse_input(text))
