"""A model's dynamic shape: which input dims vary and the values they may take (ATC's gears, or shape ranges).

ATC builds an om for a fixed set of shapes: `--dynamic_batch_size` (batch gears), `--dynamic_image_size` (H,W
gears), `--dynamic_dims` (one value per -1 dim of every input, per gear), or, on newer CANN, a shape range in
`--input_shape` (``1~8`` or ``-1`` per dim). A `DynamicShape` says which of these a model was converted with, and
`shape_at` / `gear_of` go from a gear to concrete input shapes and back; the om refuses any other shape, and the
stand-in is held to the same set.

JSON form (``model.json``'s ``converted.gears``; null for a static model):

    {"kind": "batch" | "image_size" | "dims" | "range",
     "inputs": [{"tensor": "images:0", "shape": [null, 224, 224, 3]}, ...],  # every input, null where it varies
     "varying": [{"tensor": "images:0", "axis": 0}, ...],  # the null dims above, inputs' order then axis order
     "gears": [[1], [4], [8]],  # batch: [b]; image_size: [h, w]; dims: one value per varying dim; range: []
     "ranges": [[1, 8], [224, null], ...]}  # range only: [lo, hi] per varying dim, hi null for unbounded (-1)

``dataset.json``'s ``gear`` (null for a dataset of a static model) is `gear_json`: ``{"kind": "batch", "values":
[4]}``; for a range model ``values`` holds the concrete value of each varying dim.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from binio.errors import InferError, excerpt
from binio.fields import Fields
from binio.limits import MAX_DIM
from binio.memory import available_memory, format_bytes

Shape = tuple["int | None", ...]
Gear = tuple[int, ...]  # batch: (b,); image_size: (h, w); dims and range: one value per varying dim

BATCH, IMAGE_SIZE, DIMS, RANGE = "batch", "image_size", "dims", "range"
GEAR_KINDS: tuple[str, ...] = (BATCH, IMAGE_SIZE, DIMS, RANGE)
# The convert option that makes each kind (its ATC flag is in atc_wrap.atc.command).
MIN_GEARS, MAX_GEARS = 2, 100  # ATC: "the profile range is (1, 100]"
GEAR_OPTIONS: dict[str, str] = {BATCH: "--dynamic-batch", IMAGE_SIZE: "--dynamic-image-size",
                                DIMS: "--dynamic-dims", RANGE: "--shape-range"}


class GearError(InferError):
    """A shape or gear the model was not built for, or a gear description that does not hold together."""


@dataclass(frozen=True)
class VaryingDim:
    """One dim a dynamic model decides per gear."""

    tensor: str
    axis: int


@dataclass(frozen=True)
class DimRange:
    """The values a dim of a shape-range model takes: lo..hi inclusive; hi None for no upper bound (ATC's -1)."""

    lo: int
    hi: int | None

    def holds(self, value: int) -> bool:
        return value >= self.lo and (self.hi is None or value <= self.hi)

    def text(self) -> str:
        """As ATC's --input_shape spells it: ``1~8``, or ``-1`` for any value."""
        return "-1" if self.hi is None else f"{self.lo}~{self.hi}"


@dataclass(frozen=True)
class DynamicShape:
    """What shapes a converted model takes: its inputs with None where they vary, and the gears (or ranges)."""

    kind: str
    inputs: tuple[tuple[str, Shape], ...]  # every input (tensor, shape), in the contract's order
    gears: tuple[Gear, ...] = ()
    ranges: tuple[DimRange, ...] = ()  # range only, one per varying dim

    def __post_init__(self) -> None:
        if self.kind not in GEAR_KINDS:
            raise GearError(f"gear kind {self.kind!r}: expected one of {', '.join(GEAR_KINDS)}")

    @property
    def varying(self) -> tuple[VaryingDim, ...]:
        return tuple(VaryingDim(tensor, axis) for tensor, shape in self.inputs
                     for axis, dim in enumerate(shape) if dim is None)

    @property
    def option(self) -> str:
        """The convert option this kind comes from (``--dynamic-batch``...), for messages."""
        return GEAR_OPTIONS[self.kind]

    @property
    def tensors(self) -> tuple[str, ...]:
        """The inputs with a varying dim."""
        return tuple(tensor for tensor, shape in self.inputs if None in shape)

    def batches(self) -> tuple[int, ...]:
        """The batch sizes of a batch-gear model; () for any other kind."""
        return tuple(gear[0] for gear in self.gears) if self.kind == BATCH else ()

    def allowed(self) -> str:
        """What the model takes, for messages: ``batch gears 1, 4, 8``, ``image size gears 224x224, 448x448``."""
        if self.kind == RANGE:
            ranges = ", ".join(f"{v.tensor}[{v.axis}] {r.text()}" for v, r in zip(self.varying, self.ranges,
                                                                                   strict=True))
            return f"shape ranges {ranges}"
        between = "; " if self.kind == DIMS else ", "  # a dims gear holds commas itself: ATC's ';' between gears
        return f"{self.kind.replace('_', ' ')} gears {between.join(gear_text(self.kind, g) for g in self.gears)}"

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "inputs": [{"tensor": tensor, "shape": list(shape)} for tensor, shape in self.inputs],
            "varying": [{"tensor": v.tensor, "axis": v.axis} for v in self.varying],
            "gears": [list(g) for g in self.gears],
            "ranges": [[r.lo, r.hi] for r in self.ranges],
        }

    @classmethod
    def from_fields(cls, fields: Fields) -> DynamicShape:
        """A `to_json` document read back, each value's type checked (the refusal names the file and entry)."""
        kind_name = fields.text("kind")
        if kind_name not in GEAR_KINDS:
            raise fields.refuse("kind", f"expected one of {', '.join(GEAR_KINDS)}, found {kind_name!r}")
        inputs = []
        for item in fields.children("inputs"):
            shape = tuple(None if d is None else item.check_integer(f"shape[{i}]", d, minimum=0)
                          for i, d in enumerate(item.values("shape")))
            inputs.append((item.text("tensor"), shape))
        gears = tuple(tuple(fields.check_integer(f"gears[{n}][{i}]", v, minimum=1) for i, v in enumerate(gear))
                      for n, gear in enumerate(_lists(fields, "gears")))
        ranges = tuple(_range(fields, n, pair) for n, pair in enumerate(_lists(fields, "ranges")))
        try:
            dynamic = cls(kind=kind_name, inputs=tuple(inputs), gears=gears, ranges=ranges)
            check_widths(dynamic)
        except GearError as exc:
            raise fields.refuse("gears", exc.message) from None
        return dynamic


def _lists(fields: Fields, key: str) -> list[list[Any]]:
    items = fields.values(key, [])
    for n, item in enumerate(items):
        if not isinstance(item, list):
            raise fields.refuse(f"{key}[{n}]", "expected a list of numbers")
    return items


def _range(fields: Fields, n: int, pair: list[Any]) -> DimRange:
    if len(pair) != 2:
        raise fields.refuse(f"ranges[{n}]", f"expected [lo, hi], found {len(pair)} values")
    lo = fields.check_integer(f"ranges[{n}][0]", pair[0], minimum=0)
    hi = None if pair[1] is None else fields.check_integer(f"ranges[{n}][1]", pair[1], minimum=lo)
    return DimRange(lo, hi)


def gear_width(shape: DynamicShape) -> int:
    """How many values one gear holds: 1 for batch, 2 for image size, one per varying dim otherwise."""
    return {BATCH: 1, IMAGE_SIZE: 2}.get(shape.kind, len(shape.varying))


def check_widths(shape: DynamicShape) -> None:
    """Every gear holds as many values as the kind and the varying dims say (a document edited by hand)."""
    width = gear_width(shape)
    for gear in shape.gears:
        if len(gear) != width:
            raise GearError(f"gear {','.join(map(str, gear))}: expected {width} values for "
                            f"{len(shape.varying)} varying dims ({shape.kind})")
    if shape.kind == RANGE and len(shape.ranges) != len(shape.varying):
        raise GearError(f"{len(shape.ranges)} ranges for {len(shape.varying)} varying dims")


def gear_text(kind: str, gear: Gear) -> str:
    """A gear as messages and folder names show it: ``4``, ``224x448``, ``1,128``."""
    return "x".join(map(str, gear)) if kind == IMAGE_SIZE else ",".join(map(str, gear))


def gear_label(kind: str, gear: Gear) -> str:
    """``batch 4``, ``image size 224x448``, ``dims 1,128``: a gear named for a person."""
    return f"{kind.replace('_', ' ')} {gear_text(kind, gear)}"


def gear_tag(kind: str, gear: Gear) -> str:
    """A gear as a file-name part: ``b4``, ``224x448``, ``d1_128``, ``r1_128``."""
    if kind == IMAGE_SIZE:
        return "x".join(map(str, gear))
    return {BATCH: "b", DIMS: "d", RANGE: "r"}[kind] + "_".join(map(str, gear))


def dim_values(shape: DynamicShape, gear: Gear) -> tuple[int, ...]:
    """One value per varying dim (`DynamicShape.varying`'s order) for `gear`."""
    if shape.kind == BATCH:
        return gear * len(shape.varying)
    if shape.kind == IMAGE_SIZE:
        return gear * len(shape.tensors)  # each input with varying dims varies in H and W, in that order
    return gear


def shapes_at(shape: DynamicShape, gear: Gear) -> dict[str, tuple[int, ...]]:
    """Every input's concrete shape at `gear` (tensor -> shape), in the inputs' order."""
    values = iter(dim_values(shape, gear))
    return {tensor: tuple(next(values) if d is None else d for d in dims) for tensor, dims in shape.inputs}


def check_gear_memory(shape: DynamicShape, itemsizes: Mapping[str, int]) -> None:
    """Refuses a gear whose input batch alone (each input's shape at the gear times its dtype's `itemsizes`) does not
    fit in this machine's memory: dump-bin writes it, the stand-in and TensorFlow hold it, msame's buffers are
    sized for the largest gear. Says the gear, the bytes and the memory available."""
    available = available_memory()
    if available is None or shape.kind == RANGE:
        return
    for gear in shape.gears:
        needed = sum(math.prod(dims) * itemsizes.get(tensor, 1) for tensor, dims in shapes_at(shape, gear).items())
        if needed > available:
            raise GearError(f"{shape.option} {gear_text(shape.kind, gear)}: one batch of the inputs at this gear is "
                            f"{format_bytes(needed)}, more than the {format_bytes(available)} of memory available "
                            "here", hint="give smaller gears")


def shape_at(shape: DynamicShape, gear: Gear, tensor: str) -> tuple[int, ...]:
    """The concrete shape of input `tensor` at `gear`."""
    shapes = shapes_at(shape, gear)
    if tensor not in shapes:
        raise GearError(f"input {tensor}: not an input of the model; inputs are {', '.join(shapes)}")
    return shapes[tensor]


def gear_of(shape: DynamicShape, shapes: Mapping[str, Sequence[int]]) -> Gear:
    """Which gear these concrete input shapes (tensor -> shape, every input) are; a `GearError` naming the input,
    its shape and what the model takes when they are none of its gears (or outside its ranges)."""
    values: list[int] = []
    for tensor, dims in shape.inputs:
        if tensor not in shapes:
            raise GearError(f"input {tensor}: no shape given; the model's inputs are "
                            f"{', '.join(t for t, _ in shape.inputs)}")
        given = tuple(shapes[tensor])
        if len(given) != len(dims) or any(d is not None and d != g for d, g in zip(dims, given, strict=False)):
            raise GearError(f"input {tensor}: shape {_shown(given)} does not fit {_shown(dims)} "
                            f"(the model's {shape.allowed()})")
        values.extend(g for d, g in zip(dims, given, strict=True) if d is None)
    if shape.kind == RANGE:
        for v, r, value in zip(shape.varying, shape.ranges, values, strict=True):
            if not r.holds(value):
                raise GearError(f"input {v.tensor}: dim {v.axis} is {value}, outside its range {r.text()} "
                                f"(the model's {shape.allowed()})")
        return tuple(values)
    for gear in shape.gears:
        if dim_values(shape, gear) == tuple(values):
            return gear
    found = ", ".join(f"{t} {_shown(tuple(shapes[t]))}" for t in shape.tensors)
    raise GearError(f"{found}: not a gear of the model, which takes {shape.allowed()}")


def gear_json(kind: str, gear: Gear) -> dict[str, Any]:
    """What dataset.json keeps as ``gear``."""
    return {"kind": kind, "values": list(gear)}


def gear_from_fields(fields: Fields) -> tuple[str, Gear]:
    """dataset.json's ``gear`` read back: (kind, values)."""
    kind_name = fields.text("kind")
    if kind_name not in GEAR_KINDS:
        raise fields.refuse("kind", f"expected one of {', '.join(GEAR_KINDS)}, found {kind_name!r}")
    values = tuple(fields.check_integer(f"values[{i}]", v, minimum=0) for i, v in enumerate(fields.values("values")))
    return kind_name, values


def gears_text(kind: str, gears: Sequence[Gear]) -> str:
    """Gears as ATC's options spell them: ``1,4,8`` for batch, ``224,224;448,448`` (``;`` between gears) else."""
    return (",".join(str(g[0]) for g in gears) if kind == BATCH
            else ";".join(",".join(map(str, g)) for g in gears))


def check_gear_list(kind: str, gears: Sequence[Gear], option: str) -> None:
    """The rules a gear list obeys before any model is read: every value 1 or more, ATC's 2 to 100 gears, distinct
    gears, batch sizes ascending (infer's rule: one spelling per model, and the order the stages walk). Refusals
    name `option`, the value and what is allowed."""
    value = gears_text(kind, gears)
    for gear in gears:
        low = [v for v in gear if v < 1]
        if low:
            raise GearError(f"{option} {value}: gear value {low[0]} in {gears_text(kind, [gear])}; expected whole "
                            "numbers of 1 or more")
        high = [v for v in gear if v > MAX_DIM]
        if high:
            raise GearError(f"{option} {value}: gear value {high[0]} is more than a dim holds ({MAX_DIM})")
    if not MIN_GEARS <= len(gears) <= MAX_GEARS:
        raise GearError(f"{option} {value}: expected {MIN_GEARS} to {MAX_GEARS} gears (ATC's range), found "
                        f"{len(gears)}")
    seen: set[Gear] = set()
    for gear in gears:
        if gear in seen:
            raise GearError(f"{option} {value}: gear {gears_text(kind, [gear])} is given twice; expected distinct "
                            "gears")
        seen.add(gear)
    if kind == BATCH and list(gears) != sorted(gears):
        raise GearError(f"{option} {value}: expected batch sizes in ascending order "
                        f"({gears_text(kind, sorted(gears))})")


def parse_gear_list(text: str, *, option: str, width: int | None = None) -> tuple[Gear, ...]:
    """``1,4,8`` (one value per gear, width 1) or ``224,224;448,448`` (gears by ``;``, values by ``,``): whole
    numbers of 1 or more; `width` (when given) values per gear. Refusals name `option`, the value and the item."""
    body = text.strip().strip('"').strip("'")
    if not body:
        raise GearError(f"{option} {text!r}: empty; expected at least one gear, e.g. "
                        f"{'1,4,8' if width == 1 else '224,224;448,448'}")
    separator = ";" if width != 1 else ","
    gears: list[Gear] = []
    for number, part in enumerate((p.strip() for p in body.split(separator)), start=1):
        tokens = [t.strip() for t in part.split(",")] if separator == ";" else [part]
        if not part or "" in tokens:
            where = f"item {number} is empty" if not part else f"gear {number} {part!r} has an empty value"
            raise GearError(f"{option} {text!r}: {where}; expected whole numbers of 1 or more"
                            + (", separated by ','" if separator == "," else ", ';' between gears"))
        if not all(t.isdigit() and 0 < int(t) <= MAX_DIM for t in tokens):
            raise GearError(f"{option} {excerpt(text)}: expected whole numbers from 1 to {MAX_DIM}, found "
                            f"{excerpt(part)}")
        gear = tuple(int(t) for t in tokens)
        if width is not None and len(gear) != width:
            raise GearError(f"{option} {text!r}: expected {width} values per gear, found {len(gear)} in {part!r}")
        gears.append(gear)
    return tuple(gears)


def _shown(dims: Sequence[int | None]) -> str:
    return "(" + ",".join("?" if d is None else str(d) for d in dims) + ")"
