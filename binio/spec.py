"""What a tensor is: a name, a dtype, a shape with ``None`` for unknown dims, and a layout."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from binio.dtypes import DType, dtype
from binio.errors import InferError, ShapeError
from binio.fields import Fields
from binio.names import node_name, tensor_name

Shape = tuple["int | None", ...]


def output_index(tensor: str) -> int:
    """The output index of a tensor name: ``op:1`` -> 1, ``op`` -> 0."""
    return int(tensor_name(tensor).rpartition(":")[2])


def format_shape(shape: Shape) -> str:
    """``(None, 224, 224, 3)`` -> ``(?,224,224,3)``: the form every message uses."""
    return "(" + ",".join("?" if d is None else str(d) for d in shape) + ")"


def parse_shape(text: str, *, what: str = "shape") -> Shape:
    """``1,224,224,3`` or ``[1,224,224,3]`` or ``(?,3)``; ``?``, ``-1`` and ``None`` are unknown dims."""
    body = text.strip()
    if body[:1] in "[(" and body[-1:] in "])":
        body = body[1:-1]
    if not body.strip():
        return ()
    dims: list[int | None] = []
    for part in body.split(","):
        token = part.strip()
        if token in ("?", "-1", "None", "none"):
            dims.append(None)
        elif token.isdigit():
            dims.append(int(token))
        else:
            raise ShapeError(
                f"{what} {text!r}: expected comma-separated dims (numbers, or ? for unknown), found {token!r}"
            )
    return tuple(dims)


@dataclass(frozen=True)
class TensorSpec:
    """A model input or output. ``name`` is the TF tensor name (``input:0``)."""

    name: str
    dtype: str
    shape: Shape
    layout: str = "ND"

    def __post_init__(self) -> None:
        dtype(self.dtype)  # refuses unknown names early, with the valid ones listed

    @property
    def node(self) -> str:
        return node_name(self.name)

    @property
    def dt(self) -> DType:
        return dtype(self.dtype)

    @property
    def is_static(self) -> bool:
        return all(d is not None for d in self.shape)

    @property
    def unknown_dims(self) -> tuple[int, ...]:
        return tuple(i for i, d in enumerate(self.shape) if d is None)

    @property
    def batch(self) -> int | None:
        return self.shape[0] if self.shape else None

    def static_shape(self) -> tuple[int, ...]:
        if not self.is_static:
            raise ShapeError(f"tensor {self.name}: shape {format_shape(self.shape)} has unknown dims")
        return tuple(int(d) for d in self.shape if d is not None)

    def nbytes(self) -> int:
        return math.prod(self.static_shape()) * self.dt.itemsize

    def with_dtype(self, name: str) -> TensorSpec:
        return replace(self, dtype=dtype(name).name)

    def with_shape(self, shape: Shape) -> TensorSpec:
        return replace(self, shape=tuple(shape))

    def describe(self) -> str:
        return f"{self.name} {self.dtype}{format_shape(self.shape)}"

    def to_json(self) -> dict[str, Any]:
        return {"node": self.node, "tensor": self.name, "dtype": self.dtype, "shape": list(self.shape),
                "layout": self.layout}

    @classmethod
    def from_fields(cls, fields: Fields) -> TensorSpec:
        """A tensor of a JSON document, each field's type checked (the refusal names the file and the entry)."""
        dims = fields.values("shape")
        shape = tuple(None if d is None else fields.check_integer(f"shape[{i}]", d, minimum=0)
                      for i, d in enumerate(dims))
        dtype_name = fields.text("dtype")
        try:
            dtype(dtype_name)
        except InferError as exc:
            raise fields.refuse("dtype", exc.message) from None
        return cls(name=fields.text("tensor"), dtype=dtype_name, shape=shape, layout=fields.text("layout", "ND"))
