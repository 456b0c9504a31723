"""The `--inputs` and `--set` syntax.

An input is ``NAME[DIMS]:DTYPE`` with the shape and the dtype optional, e.g. ``images``,
``IteratorGetNext:0[?,224,224,3]``, ``input_ids:0[8,128]:int32``. NAME is a node or tensor name; a tensor's
output index (``:0``) is digits, a dtype is a word, and the shape sits in brackets, so the three never mix up
(the bracket form is tf2onnx's). Inputs are separated by commas outside brackets. In DIMS, ``?`` is a dim to take
from the graph, and ``-1`` one to keep unknown in the frozen pb (a dynamic dim for infer convert's gears).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from binio.dtypes import dtype
from binio.errors import DtypeError
from binio.spec import Shape, parse_shape
from binio.texts import split_top_level
from ckpt2pb.errors import FreezeError

_ITEM = re.compile(
    r"^(?P<name>[^\[\]=\s][^\[\]=]*?)(?:\[(?P<shape>[^\[\]]*)\])?(?::(?P<dtype>[A-Za-z][A-Za-z0-9_]*))?$"
)


@dataclass(frozen=True)
class InputRequest:
    """One `--inputs` item: a tensor and, where given, the shape and dtype it must have."""

    name: str
    shape: Shape | None = None
    dtype: str | None = None
    text: str = ""  # as the user wrote it, for messages
    dynamic: tuple[int, ...] = ()  # the dims written -1: kept unknown (for convert's gears), not taken from the graph


def parse_input(text: str) -> InputRequest:
    found = _ITEM.match(text.strip())
    if found is None:
        raise FreezeError(f"--inputs {text!r}: expected NAME, NAME[DIMS] or NAME[DIMS]:DTYPE "
                          "(e.g. IteratorGetNext:0[?,224,224,3]:float32)")
    shape = None if found["shape"] is None else parse_shape(found["shape"], what=f"--inputs {text!r}: shape")
    dtype_name = None
    if found["dtype"] is not None:
        try:
            dtype_name = dtype(found["dtype"]).name
        except DtypeError as exc:
            raise DtypeError(f"--inputs {text!r}: {exc.message}") from None
    dynamic = () if found["shape"] is None else _dynamic_dims(found["shape"])
    return InputRequest(name=found["name"].strip(), shape=shape, dtype=dtype_name, text=text.strip(),
                        dynamic=dynamic)


def _dynamic_dims(dims: str) -> tuple[int, ...]:
    """The positions written ``-1`` in ``[-1,?,224,3]``."""
    return tuple(i for i, token in enumerate(dims.split(",")) if token.strip() == "-1")


def parse_inputs(text: str) -> tuple[InputRequest, ...]:
    return tuple(parse_input(item) for item in split_top_level(text))


def parse_assignment(text: str) -> tuple[str, str]:
    """``is_training=false`` -> (``is_training``, ``false``)."""
    name, sep, value = text.partition("=")
    if not sep or not name.strip() or not value.strip():
        raise FreezeError(f"--set {text!r}: expected NAME=VALUE (e.g. is_training=false)")
    return name.strip(), value.strip()


def parse_value(text: str, dtype_name: str, *, what: str) -> bool | int | float:
    """A scalar of the placeholder's dtype from its text."""
    entry = dtype(dtype_name)
    lowered = text.lower()
    if entry.is_bool:
        if lowered in ("true", "1", "yes"):
            return True
        if lowered in ("false", "0", "no"):
            return False
        raise FreezeError(f"{what}: {text!r} is not a bool (expected true or false)")
    try:
        value: int | float = int(text) if entry.is_integer else float(text)
    except ValueError:
        raise FreezeError(f"{what}: {text!r} is not {_article(entry.name)} {entry.name} value") from None
    if entry.is_integer:
        import numpy as np

        limits = np.iinfo(entry.numpy)
        if not limits.min <= value <= limits.max:
            raise FreezeError(f"{what}: {text} is out of range for {entry.name} ({limits.min} to {limits.max})")
    return value


def _article(word: str) -> str:
    return "an" if word.startswith("int") else "a"  # an int32, a uint8, a float16
