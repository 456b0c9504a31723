"""Tensor names, shapes and specs: the forms every message and every file uses."""

from __future__ import annotations

from pathlib import Path

import pytest

from binio.errors import DtypeError, ShapeError
from binio.fields import Fields
from binio.spec import TensorSpec, format_shape, node_name, output_index, parse_shape, tensor_name


@pytest.mark.parametrize(("text", "shape"), [
    ("1,224,224,3", (1, 224, 224, 3)),
    ("[1,224,224,3]", (1, 224, 224, 3)),
    ("(?, 3)", (None, 3)),
    ("-1,8", (None, 8)),
    ("None,2", (None, 2)),
    ("[]", ()),
    ("", ()),
    ("7", (7,)),
])
def test_parse_shape(text: str, shape: tuple[int | None, ...]) -> None:
    assert parse_shape(text) == shape


def test_parse_shape_names_the_bad_token() -> None:
    with pytest.raises(ShapeError) as caught:
        parse_shape("1,x,3", what="--inputs shape")
    assert str(caught.value) == "--inputs shape '1,x,3': expected comma-separated dims (numbers, or ? for unknown), " \
                                "found 'x'"


def test_format_shape_round_trips() -> None:
    assert format_shape((None, 224, 224, 3)) == "(?,224,224,3)"
    assert parse_shape(format_shape((None, 2))) == (None, 2)
    assert format_shape(()) == "()"


@pytest.mark.parametrize(("given", "node", "tensor", "index"), [
    ("images", "images", "images:0", 0),
    ("images:0", "images", "images:0", 0),
    ("IteratorGetNext:1", "IteratorGetNext", "IteratorGetNext:1", 1),
    ("bert/encoder/out:0", "bert/encoder/out", "bert/encoder/out:0", 0),
    ("^ctrl", "ctrl", "ctrl:0", 0),
])
def test_node_and_tensor_names(given: str, node: str, tensor: str, index: int) -> None:
    assert node_name(given) == node
    assert tensor_name(given) == tensor
    assert output_index(given) == index


def test_spec_refuses_unknown_dtype_at_creation() -> None:
    with pytest.raises(DtypeError, match="unknown dtype 'float33'"):
        TensorSpec("x:0", "float33", (1,))


def test_spec_static_shape_and_bytes() -> None:
    spec = TensorSpec("images:0", "float16", (2, 8, 8, 3), layout="NHWC")
    assert spec.node == "images" and spec.is_static and spec.batch == 2
    assert spec.nbytes() == 2 * 8 * 8 * 3 * 2
    assert spec.describe() == "images:0 float16(2,8,8,3)"


def test_dynamic_spec_refuses_a_static_shape() -> None:
    spec = TensorSpec("images:0", "float32", (None, 8, None, 3))
    assert spec.unknown_dims == (0, 2)
    with pytest.raises(ShapeError) as caught:
        spec.static_shape()
    assert str(caught.value) == "tensor images:0: shape (?,8,?,3) has unknown dims"
    assert spec.with_shape((1, 8, 8, 3)).is_static


def test_spec_json_round_trip() -> None:
    spec = TensorSpec("a/b:1", "int32", (None, 128))
    assert spec.to_json() == {"node": "a/b", "tensor": "a/b:1", "dtype": "int32", "shape": [None, 128],
                              "layout": "ND"}
    assert TensorSpec.from_fields(Fields(spec.to_json(), path=Path("tensor"), entry="", error=ShapeError)) == spec
    assert spec.with_dtype("fp16").dtype == "float16"
