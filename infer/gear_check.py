"""Bins held to the converted model's gears, wherever they meet it (run's preflight, compare): the om refuses a
shape that is none of its gears at run time, and the stand-in, which would run any shape, is held to the same."""

from __future__ import annotations

from binio.errors import InferError
from binio.gears import BATCH, IMAGE_SIZE, DynamicShape, Gear, GearError, gear_of
from binio.manifest import DatasetManifest


class GearMismatchError(InferError):
    """Bins whose shapes are none of the model's gears (or outside its shape ranges)."""


def dump_flag(kind: str) -> str:
    """The dump-bin option that names a gear of this kind."""
    return {BATCH: "--batch", IMAGE_SIZE: "--image-size"}.get(kind, "--dims")


def check_dataset_gear(manifest: DatasetManifest, gears: DynamicShape | None) -> Gear | None:
    """The gear the bins are, by their shapes; refuses, naming dataset.json, the bins' shapes and the gears, a
    dataset that is no gear of the model. None for a static model, or bins without one of the inputs (the
    caller's own checks name it)."""
    if gears is None:
        return None
    shapes = {}
    for tensor, _ in gears.inputs:
        item = manifest.find(tensor)
        if item is None:
            return None
        shapes[tensor] = item.shape
    try:
        return gear_of(gears, shapes)
    except GearError as exc:
        raise GearMismatchError(f"{manifest.path}: bins {exc.message}",
                                hint=f"re-run infer dump-bin with {dump_flag(gears.kind)} set to one of them") from None
