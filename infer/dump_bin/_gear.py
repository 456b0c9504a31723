"""Which gear of a dynamic model a dump is: the one --batch, --image-size or --dims names, refused before any
source opens when the model was not built for it (the om would refuse it at run time, msame without saying why).
The inputs then have the gear's concrete shapes (images are resized to its H and W), and dataset.json says which
gear it is."""

from __future__ import annotations

from dataclasses import dataclass

from binio.errors import ShapeError
from binio.gears import BATCH, DIMS, IMAGE_SIZE, RANGE, DynamicShape, Gear, GearError, gear_of, shapes_at
from binio.spec import TensorSpec, format_shape
from infer.contract import ModelContract
from infer.dump_bin.options import DumpOptions
from infer.gear_check import dump_flag


@dataclass(frozen=True)
class DumpGear:
    """The gear a dump writes, and the model's inputs at it."""

    kind: str
    gear: Gear
    specs: tuple[TensorSpec, ...]


def dump_gear(contract: ModelContract, options: DumpOptions) -> DumpGear | None:
    """The gear the options name, for a model converted with gears (or a shape range); None for any other model,
    whose refusal of --image-size and --dims is made here."""
    gears = contract.gears
    specs = contract.model_inputs
    if gears is None:
        given = _given_gear_options(options)
        if given:
            listed = ", ".join(f"{s.name} {format_shape(s.shape)}" for s in specs)
            raise ShapeError(f"{given}: the model has no {given[2:].replace('-', ' ')} gears ({contract.path} "
                             f"records none; inputs {listed})",
                             hint="convert with --dynamic-image-size or --dynamic-dims (from a pb frozen with -1 "
                                  "dims) to make gears")
        return None
    gear = _asked(gears, options, specs)
    try:
        shapes = shapes_at(gears, gear)
        gear_of(gears, shapes)
    except GearError as exc:
        given = ",".join(map(str, gear))
        raise ShapeError(f"{dump_flag(gears.kind)} {given}: not a gear of the model: it takes "
                         f"{gears.allowed()} ({contract.path})" if gears.kind != RANGE else
                         f"--dims {given}: {exc.message}",
                         hint=f"give one of them: {_choices(gears)}") from None
    return DumpGear(gears.kind, gear, tuple(spec.with_shape(shapes.get(spec.name, spec.shape)) for spec in specs))


def _given_gear_options(options: DumpOptions) -> str:
    if options.image_size is not None:
        return "--image-size"
    return "--dims" if options.dims else ""


def _choices(gears: DynamicShape) -> str:
    if gears.kind == RANGE:
        return gears.allowed()
    flag = dump_flag(gears.kind)
    return "; ".join(f"{flag} {','.join(map(str, g))}" for g in gears.gears)  # a dims gear holds commas


def _asked(gears: DynamicShape, options: DumpOptions, specs: tuple[TensorSpec, ...]) -> Gear:
    """The gear named by the option that goes with the model's kind; the others refused by name."""
    own = dump_flag(gears.kind)
    stray = [flag for flag, value in (("--image-size", options.image_size), ("--dims", options.dims))
             if value and flag != own]
    if stray:
        raise ShapeError(f"{stray[0]}: the model's gears are {gears.allowed()} (give {own} instead)",
                         hint=f"one of: {_choices(gears)}")
    if gears.kind == BATCH:
        if options.batch is None:
            raise ShapeError(f"input {gears.tensors[0]}: the batch dimension is dynamic; pass --batch N, one of the "
                             f"model's {gears.allowed()}", hint=f"e.g. --batch {gears.batches()[-1]}")
        return (options.batch,)
    if gears.kind == IMAGE_SIZE:
        if options.image_size is None:
            raise ShapeError(f"input {gears.tensors[0]}: H and W are dynamic; pass --image-size H,W, one of the "
                             f"model's {gears.allowed()}", hint=f"one of: {_choices(gears)}")
        _check_static_batch(options, specs)
        return tuple(options.image_size)
    if not options.dims:
        raise ShapeError(f"inputs {', '.join(gears.tensors)}: dims are dynamic; pass --dims with one value per "
                         f"unknown dim, one of the model's {gears.allowed()}", hint=f"one of: {_choices(gears)}")
    if all(v.axis != 0 for v in gears.varying):
        _check_static_batch(options, specs)
    elif options.batch is not None:
        raise ShapeError(f"--batch {options.batch}: the model's {gears.kind} gears decide the first dim; give it in "
                         f"--dims", hint=f"one of: {_choices(gears)}")
    if gears.kind in (DIMS, RANGE) and len(options.dims) != len(gears.varying):
        listed = ", ".join(f"{v.tensor}[{v.axis}]" for v in gears.varying)
        raise ShapeError(f"--dims {','.join(map(str, options.dims))}: expected {len(gears.varying)} values, one per "
                         f"unknown dim ({listed})", hint=f"one of: {_choices(gears)}")
    return tuple(options.dims)


def _check_static_batch(options: DumpOptions, specs: tuple[TensorSpec, ...]) -> None:
    """A model whose gears leave the batch fixed takes that batch: --batch may only repeat it."""
    if options.batch is None:
        return
    fixed = {s.shape[0] for s in specs if s.shape and s.shape[0] is not None}
    if fixed and options.batch not in fixed:
        raise ShapeError(f"--batch {options.batch} differs from the model's batch {min(fixed)} (its gears vary "
                         "other dims)", hint="drop --batch")
