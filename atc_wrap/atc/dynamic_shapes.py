"""ATC's dynamic shapes, checked as ATC checks them, before it runs: gears (`--dynamic_batch_size`,
`--dynamic_image_size`, `--dynamic_dims`) or a shape range in `--input_shape`.

What ATC's documentation says (CANN 8 ATC parameter pages), and what is enforced here:
- the three gear options and a shape range are mutually exclusive: one dynamic option at a time;
- each gear option takes 2 to 100 gears ("the profile range is (1, 100]");
- a gear option acts on the -1 dims of `--input_shape` and fails with E10031 when there is none;
  `--dynamic_batch_size` on the first dim, `--dynamic_image_size` on H and W (every input with -1 dims shares
  each gear: ``data(8,3,416,416)+img_info(8,4,416,416)``), `--dynamic_dims` on any dims, one value per -1 dim of
  all inputs in order in each gear;
- `--dynamic_dims` cannot be combined with `--insert_op_conf` (AIPP);
- a shape range (``1~10``, or ``-1`` for any value) is not supported on the Atlas 200/300/500 inference products
  (Ascend310).
What is infer's own rule, not ATC's documented one: gears must be distinct and a batch list ascending (one spelling
per model, and the gears in the order dump-bin, run and compare walk them); an image size is refused with AIPP
(ATC needs AIPP's crop and padding off and the source size per gear, which infer's AIPP config does not write).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from atc_wrap.errors import ConvertError
from binio.gears import (
    BATCH,
    DIMS,
    IMAGE_SIZE,
    RANGE,
    DimRange,
    DynamicShape,
    Gear,
    GearError,
    check_gear_list,
    check_gear_memory,
    gears_text,
)
from binio.spec import TensorSpec, format_shape

ATC_GEAR_FLAGS: dict[str, str] = {BATCH: "--dynamic_batch_size", IMAGE_SIZE: "--dynamic_image_size",
                                  DIMS: "--dynamic_dims"}
NO_RANGE_SOCS: tuple[str, ...] = ("Ascend310",)  # Atlas 200/300/500 inference products: no shape range


@dataclass(frozen=True)
class GearRequest:
    """The dynamic options as the user gave them (each empty when not given)."""

    dynamic_batch: tuple[int, ...] = ()
    dynamic_image_size: tuple[Gear, ...] = ()
    dynamic_dims: tuple[Gear, ...] = ()
    shape_range: tuple[tuple[str, tuple[DimRange | int, ...]], ...] = ()  # (input name, dims) as given

    def given(self) -> tuple[str, ...]:
        """The options given, as the convert flags spell them."""
        flags = {"--dynamic-batch": self.dynamic_batch, "--dynamic-image-size": self.dynamic_image_size,
                 "--dynamic-dims": self.dynamic_dims, "--shape-range": self.shape_range}
        return tuple(flag for flag, value in flags.items() if value)

    def shape_range_text(self) -> str:
        """The shape range as --shape-range takes it (``images:1~8,224,224,3``); "" for none."""
        return ";".join(f"{name}:{','.join(d.text() if isinstance(d, DimRange) else str(d) for d in dims)}"
                        for name, dims in self.shape_range)


def _static_refusal(inputs: Sequence[TensorSpec], flag: str, value: str) -> ConvertError:
    shapes = ", ".join(f"{s.name} {format_shape(s.shape)}" for s in inputs)
    example = "".join(f" (e.g. '{s.node}[{','.join('-1' if axis == 0 else str(d) for axis, d in enumerate(s.shape))}]' "
                      "for its batch dim)" for s in inputs[:1] if s.shape)
    return ConvertError(f"{flag} {value}: every input's shape is static ({shapes}); ATC would fail with E10031 "
                        "(a dynamic option needs a -1 dim in --input_shape)",
                        hint=f"re-freeze keeping the dims unknown: infer freeze --batch -1, or -1 in --inputs{example}")


def _check_count(gears: Sequence[Gear], kind: str, flag: str) -> None:
    try:
        check_gear_list(kind, gears, flag)
    except GearError as exc:
        raise ConvertError(exc.message, hint=exc.hint) from None


def check_dynamic(inputs: Sequence[TensorSpec], request: GearRequest, *, input_format: str = "", aipp: bool = False,
                  soc_version: str = "", soc_assumed: bool = False) -> DynamicShape | None:
    """The model's dynamic shape for `request` over the frozen `inputs`, after every check ATC makes (and infer's
    own, in the module's docstring); None for a static model with no dynamic option. Refusals name the option, the
    value and what is allowed. `soc_assumed`: `soc_version` is the chip the stand-in assumed, not the user's."""
    given = request.given()
    if len(given) > 1:
        raise ConvertError(f"{' and '.join(given)}: ATC takes one dynamic option at a time "
                           "(--dynamic_batch_size, --dynamic_image_size, --dynamic_dims or a shape range)")
    if not given:
        dynamic = [spec for spec in inputs if not spec.is_static]
        if dynamic:
            spec = dynamic[0]
            raise ConvertError(
                f"input {spec.name}: shape {format_shape(spec.shape)} has unknown dims; ATC needs static shapes "
                "or a dynamic option",
                hint="re-run infer freeze with --batch N, or give --dynamic-batch, --dynamic-image-size, "
                     "--dynamic-dims or --shape-range for the unknown dims")
        return None
    if request.shape_range:
        return _ranged(inputs, request.shape_range, soc_version, soc_assumed)
    if request.dynamic_batch:
        shape = _batch(inputs, tuple((b,) for b in request.dynamic_batch))
    elif request.dynamic_image_size:
        shape = _image_size(inputs, request.dynamic_image_size, input_format, aipp)
    else:
        shape = _dims(inputs, request.dynamic_dims, aipp)
    check_gear_memory(shape, {spec.name: spec.dt.itemsize for spec in inputs})
    return shape


def _inputs(inputs: Sequence[TensorSpec]) -> tuple[tuple[str, tuple[int | None, ...]], ...]:
    return tuple((spec.name, tuple(spec.shape)) for spec in inputs)


def _batch(inputs: Sequence[TensorSpec], gears: tuple[Gear, ...]) -> DynamicShape:
    flag = "--dynamic-batch"
    _check_count(gears, BATCH, flag)
    value = gears_text(BATCH, gears)
    if all(spec.is_static for spec in inputs):
        raise _static_refusal(inputs, flag, value)
    batched = [spec for spec in inputs if spec.shape and spec.shape[0] is None]
    if not batched:
        shapes = ", ".join(f"{s.name} {format_shape(s.shape)}" for s in inputs)
        raise ConvertError(
            f"{flag} {value}: no input has an unknown (-1) batch dim to vary ({shapes}); ATC would fail with E10031",
            hint="infer freeze --batch -1 keeps the batch dim unknown for --dynamic-batch")
    other = [spec for spec in inputs if spec.unknown_dims and spec.unknown_dims != (0,)]
    if other:
        raise ConvertError(f"{flag} {value}: input {other[0].name} {format_shape(other[0].shape)} has unknown dims "
                           "besides the batch; --dynamic-batch varies only the first dim",
                           hint="fix the other dims at freeze (--inputs), or give --dynamic-dims for all of them")
    return DynamicShape(BATCH, _inputs(inputs), gears=gears)


def _hw_axes(spec: TensorSpec, input_format: str) -> tuple[int, int]:
    layout = (input_format or spec.layout).upper()
    return (2, 3) if layout == "NCHW" else (1, 2)


def _image_size_hint(spec: TensorSpec, axes: tuple[int, int]) -> str:
    """A re-freeze that fits --dynamic-image-size, built from the input's own rank, layout and dims."""
    if len(spec.shape) != 4:
        return (f"{spec.node} is {len(spec.shape)}-D and --dynamic-image-size needs 4-D inputs; give --dynamic-dims "
                "for its unknown dims")
    dims = ["-1" if axis in axes else "N" if dim is None else str(dim) for axis, dim in enumerate(spec.shape)]
    fixed = " (N: the value to fix)" if "N" in dims else ""
    return (f"re-freeze with -1 on H and W only, e.g. --inputs '{spec.node}[{','.join(dims)}]'{fixed}; other "
            "unknown dims need --dynamic-dims")


def _image_size(inputs: Sequence[TensorSpec], gears: tuple[Gear, ...], input_format: str,
                aipp: bool) -> DynamicShape:
    flag = "--dynamic-image-size"
    _check_count(gears, IMAGE_SIZE, flag)
    value = gears_text(IMAGE_SIZE, gears)
    if all(spec.is_static for spec in inputs):
        raise _static_refusal(inputs, flag, value)
    if aipp:
        raise ConvertError(f"{flag} {value}: not with --aipp (ATC needs AIPP's crop and padding off and each gear's "
                           "source size, which infer's AIPP config does not write)",
                           hint="preprocess host-side (infer dump-bin's options), or convert one static size per om")
    for spec in inputs:
        if spec.is_static:
            continue
        axes = _hw_axes(spec, input_format)
        if len(spec.shape) != 4 or spec.unknown_dims != axes:
            where = "H and W (dims 2, 3 of NCHW)" if axes == (2, 3) else "H and W (dims 1, 2 of NHWC)"
            raise ConvertError(f"{flag} {value}: input {spec.name} {format_shape(spec.shape)} must be 4-D with "
                               f"exactly {where} unknown (-1)",
                               hint=_image_size_hint(spec, axes))
    return DynamicShape(IMAGE_SIZE, _inputs(inputs), gears=gears)


def _dims(inputs: Sequence[TensorSpec], gears: tuple[Gear, ...], aipp: bool) -> DynamicShape:
    flag = "--dynamic-dims"
    value = gears_text(DIMS, gears)
    if all(spec.is_static for spec in inputs):
        raise _static_refusal(inputs, flag, value)
    unknown = [(spec.name, axis) for spec in inputs for axis in spec.unknown_dims]
    for gear in gears:
        if len(gear) != len(unknown):
            listed = ", ".join(f"{name}[{axis}]" for name, axis in unknown)
            raise ConvertError(f"{flag} {value}: gear {','.join(map(str, gear))} gives {len(gear)} values; each gear "
                               f"needs one per unknown (-1) dim of the inputs, in order: {len(unknown)} ({listed})")
    _check_count(gears, DIMS, flag)
    if aipp:
        raise ConvertError(f"{flag} {value}: not with --aipp (ATC refuses --dynamic_dims with --insert_op_conf)")
    return DynamicShape(DIMS, _inputs(inputs), gears=gears)


def _ranged(inputs: Sequence[TensorSpec], given: tuple[tuple[str, tuple[DimRange | int, ...]], ...],
            soc_version: str, soc_assumed: bool = False) -> DynamicShape:
    flag = "--shape-range"
    value = ";".join(f"{name}:{','.join(d.text() if isinstance(d, DimRange) else str(d) for d in dims)}"
                     for name, dims in given)
    if soc_version in NO_RANGE_SOCS:
        chip = (f"{soc_version}, the chip assumed without --soc-version" if soc_assumed else soc_version)
        raise ConvertError(f"{flag} {value}: ATC has no shape range for {chip} (Atlas 200/300/500 inference "
                           "products)",
                           hint=("give --soc-version for a chip with shape ranges (e.g. Ascend310P3), or gears: "
                                 if soc_assumed else "give gears instead: ")
                           + "--dynamic-batch, --dynamic-image-size or --dynamic-dims")
    known = {spec.name: spec for spec in inputs} | {spec.node: spec for spec in inputs}
    by_name: dict[str, tuple[DimRange | int, ...]] = {}
    named: dict[str, str] = {}  # input tensor -> the name it was given as
    for name, given_dims in given:
        if name not in known:
            raise ConvertError(f"{flag} {value}: {name!r} is not an input; inputs are "
                               f"{', '.join(s.node for s in inputs)}")
        tensor = known[name].name
        if tensor in named:
            same = "" if named[tensor] == name else f" (as {named[tensor]!r} and {name!r})"
            raise ConvertError(f"{flag} {value}: input {known[name].node} is given twice{same}; expected one "
                               "NAME:DIMS per input")
        named[tensor] = name
        by_name[name] = given_dims
    shaped: list[tuple[str, tuple[int | None, ...]]] = []
    ranges: list[DimRange] = []
    for spec in inputs:
        dims = by_name.get(spec.name, by_name.get(spec.node))
        if dims is None:
            if not spec.is_static:
                raise ConvertError(f"{flag} {value}: input {spec.node} {format_shape(spec.shape)} has unknown dims "
                                   "but no range", hint=f"add {spec.node}:DIMS with lo~hi or -1 for them")
            shaped.append((spec.name, tuple(spec.shape)))
            continue
        if len(dims) != len(spec.shape):
            raise ConvertError(f"{flag} {value}: input {spec.node} has {len(spec.shape)} dims "
                               f"{format_shape(spec.shape)}, the range gives {len(dims)}")
        shape: list[int | None] = []
        for axis, (dim, known_dim) in enumerate(zip(dims, spec.shape, strict=True)):
            if isinstance(dim, DimRange):
                if known_dim is not None:
                    raise ConvertError(f"{flag} {value}: input {spec.node} dim {axis} is fixed to {known_dim} in "
                                       f"the frozen pb {format_shape(spec.shape)}; only an unknown dim can range",
                                       hint="re-freeze with -1 for it in --inputs")
                if dim.hi is not None and dim.hi < dim.lo:
                    raise ConvertError(f"{flag} {value}: input {spec.node} dim {axis} range {dim.text()} is empty "
                                       "(lo above hi)")
                shape.append(None)
                ranges.append(dim)
            else:
                if known_dim is not None and dim != known_dim:
                    raise ConvertError(f"{flag} {value}: input {spec.node} dim {axis} is {dim}, the frozen pb's "
                                       f"is {known_dim} {format_shape(spec.shape)}")
                shape.append(dim)
        shaped.append((spec.name, tuple(shape)))
    if not ranges:
        raise ConvertError(f"{flag} {value}: no dim is given a range (lo~hi or -1)")
    return DynamicShape(RANGE, tuple(shaped), ranges=tuple(ranges))


def parse_shape_range(text: str, flag: str) -> tuple[tuple[str, tuple[DimRange | int, ...]], ...]:
    """``images:1~8,224,224,3;mask:-1,16``: per input its dims, each a number, ``lo~hi`` or ``-1`` (any value)."""
    found: list[tuple[str, tuple[DimRange | int, ...]]] = []
    for part in (p.strip() for p in text.strip().strip('"').split(";")):
        if not part:
            continue
        name, sep, body = part.rpartition(":")
        if not sep or not name.strip() or not body.strip():
            raise ConvertError(f"{flag} {text!r}: expected NAME:DIMS;NAME:DIMS with each dim N, lo~hi or -1, "
                               f"found {part!r}")
        dims: list[DimRange | int] = []
        for token in (t.strip() for t in body.split(",")):
            lo, tilde, hi = token.partition("~")
            if token == "-1":
                dims.append(DimRange(0, None))
            elif tilde and lo.isdigit() and hi.isdigit():
                dims.append(DimRange(int(lo), int(hi)))
            elif token.isdigit():
                dims.append(int(token))
            else:
                raise ConvertError(f"{flag} {text!r}: dim {token!r} of {name.strip()}: expected N, lo~hi or -1")
        found.append((name.strip(), tuple(dims)))
    if not found:
        raise ConvertError(f"{flag} {text!r}: expected NAME:DIMS (e.g. images:1~8,224,224,3)")
    return tuple(found)


def gear_argv(shape: DynamicShape | None) -> tuple[str, ...]:
    """The ATC argument that makes the gears (a range lives in --input_shape, so none for it)."""
    if shape is None or shape.kind == RANGE:
        return ()
    value = gears_text(shape.kind, shape.gears)
    return (f"{ATC_GEAR_FLAGS[shape.kind]}={value}",)


def input_shape_text(shape: DynamicShape | None, inputs: Sequence[TensorSpec]) -> str:
    """``images:-1,224,224,3;mask:1,224`` in the inputs' order; a ranged dim as ``1~8`` (or ``-1``)."""
    ranges = iter(shape.ranges) if shape is not None and shape.kind == RANGE else iter(())
    shapes = dict(shape.inputs) if shape is not None else {}
    parts = []
    for spec in inputs:
        dims = shapes.get(spec.name, tuple(spec.shape))
        text = []
        for dim in dims:
            if dim is not None:
                text.append(str(dim))
            else:
                text.append(next(ranges).text() if shape is not None and shape.kind == RANGE else "-1")
        parts.append(f"{spec.node}:{','.join(text)}")
    return ";".join(parts)
