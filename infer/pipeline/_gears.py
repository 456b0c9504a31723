"""A pipeline whose [convert] asks for gears (``dynamic_batch = [1, 4, 8]``, ``dynamic_image_size``,
``dynamic_dims``) dumps, runs and compares once per gear, each in folders of its own (``bins_b4``, ``out_b4``,
``report_b4``), and its verdict is the one across gears. A shape range has no gears to walk: refused here."""

from __future__ import annotations

from dataclasses import dataclass, replace

from binio.gears import BATCH, DIMS, IMAGE_SIZE, Gear, gear_label, gear_tag
from infer.pipeline._decode import ConfigError
from infer.pipeline.config import PipelineConfig

PER_GEAR_STAGES: tuple[str, ...] = ("dump-bin", "run", "compare")


@dataclass(frozen=True)
class PipelineGear:
    """One gear the pipeline walks: its folder suffix, its name, and the config with dump-bin set to it."""

    tag: str  # b4, 224x448, d1_128
    label: str  # batch 4, image size 224x448
    config: PipelineConfig


def _with_gear(config: PipelineConfig, kind: str, gear: Gear) -> PipelineConfig:
    dump = config.data.dump
    if kind == BATCH:
        dump = replace(dump, batch=gear[0])
    elif kind == IMAGE_SIZE:
        dump = replace(dump, image_size=(gear[0], gear[1]))
    else:
        dump = replace(dump, dims=gear)
    return replace(config, data=replace(config.data, dump=dump))


def pipeline_gears(config: PipelineConfig) -> tuple[PipelineGear, ...]:
    """The gears [convert] asks for, in the order given; () for a model without gears."""
    convert = config.convert
    if convert.shape_range.strip():
        raise ConfigError(f"{config.path}: [convert] shape_range: the pipeline dumps, runs and compares one "
                          "dataset per gear, and a shape range has none",
                          hint="give gears (dynamic_batch, dynamic_image_size or dynamic_dims), or run the stages "
                               "by hand with dump-bin --dims for each shape")
    asked: list[tuple[str, tuple[Gear, ...]]] = [
        (BATCH, tuple((b,) for b in convert.dynamic_batch)), (IMAGE_SIZE, convert.dynamic_image_size),
        (DIMS, convert.dynamic_dims)]
    for kind, gears in asked:
        if gears:
            return tuple(PipelineGear(gear_tag(kind, gear), gear_label(kind, gear), _with_gear(config, kind, gear))
                         for gear in gears)
    return ()
