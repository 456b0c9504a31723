"""The gears of a fake om, and how the fake msame and ais_bench pick one, as the real tools do.

A fake om may be a JSON document holding the ATC options it was "built" with, in ATC's own spelling:

    {"fake_om": {"input_shape": "a:-1,3;b:-1,3", "dynamic_batch_size": "1,2,4"}}

(or ``dynamic_image_size`` "224,224;448,448", ``dynamic_dims`` "1,224;2,448", or an ``input_shape`` with ranges
``a:1~8,3`` and no dynamic option). Its gears fill the -1 dims as ATC fills them: a batch gear every -1 dim, an
image-size gear the two -1 dims of each input that has them, a dims gear the -1 dims of all inputs in order. The
tools' checks and messages follow Ascend/tools 9d6da90 (msame/src/model_process.cpp CheckDynamicBatchSize,
CheckDynamicHWSize, CheckDynamicDims, CheckDynamicShape; ais_bench's ModelInferenceProcessor.cpp the same);
docs/ascend-tools.md has the list.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

Shape = tuple[int, ...]


class GearRefused(Exception):
    """The gear flags do not fit the om: the lines the tool prints, [ERROR] first."""

    def __init__(self, *lines: str) -> None:
        super().__init__(lines[0])
        self.lines = lines


@dataclass(frozen=True)
class FakeGears:
    kind: str  # batch, image_size, dims, range
    names: tuple[str, ...]  # the om's input names (ATC's --input_shape names), in order
    shapes: tuple[Shape, ...]  # -1 where a gear decides
    gears: tuple[Shape, ...] = ()
    ranges: tuple[tuple[tuple[int, int], ...], ...] = ()  # range: per input, per dim (lo, hi); hi -1 unbounded

    def shapes_at(self, gear: Shape) -> tuple[Shape, ...]:
        values = iter(self._fill(gear))
        return tuple(tuple(next(values) if d == -1 else d for d in shape) for shape in self.shapes)

    def _fill(self, gear: Shape) -> list[int]:
        varying = [shape.count(-1) for shape in self.shapes]
        if self.kind == "batch":
            return list(gear) * sum(varying)
        if self.kind == "image_size":
            return list(gear) * sum(1 for count in varying if count)
        return list(gear)


def om_gears(om: Path) -> FakeGears | None:
    """The gears a fake om holds; None for a static one (any om that is not such a JSON document)."""
    try:
        options = json.loads(om.read_bytes())["fake_om"]
    except (ValueError, KeyError, TypeError):
        return None
    names, shapes, ranges = [], [], []
    for part in options["input_shape"].split(";"):
        name, _, dims = part.rpartition(":")
        names.append(name)
        shape, bounds = [], []
        for dim in dims.split(","):
            if "~" in dim:
                lo, hi = dim.split("~")
                shape.append(-1)
                bounds.append((int(lo), int(hi) if hi else -1))
            else:
                shape.append(int(dim))
                bounds.append((0, -1) if int(dim) == -1 else (int(dim), int(dim)))
        shapes.append(tuple(shape))
        ranges.append(tuple(bounds))
    for key, kind in (("dynamic_batch_size", "batch"), ("dynamic_image_size", "image_size"),
                      ("dynamic_dims", "dims")):
        if key in options:
            separator = "," if kind == "batch" else ";"
            gears = tuple(tuple(int(v) for v in gear.split(",")) for gear in options[key].split(separator))
            return FakeGears(kind, tuple(names), tuple(shapes), gears)
    return FakeGears("range", tuple(names), tuple(shapes), ranges=tuple(ranges))


def _numbers(text: str) -> list[int]:
    return [int(v) for v in text.split(",") if v.strip()]


def chosen_shapes(gears: FakeGears | None, *, batch: int, hw: str | None, dims: str | None,
                  shape: str | None) -> tuple[tuple[Shape, ...] | None, Shape | None]:
    """The input shapes the flags pick (None for a static om) and the gear (None for a range om's shape).
    Raises `GearRefused` with the tool's lines where the flags do not fit the om."""
    if batch:
        if gears is None or gears.kind != "batch":
            raise GearRefused("[ERROR] the dynamic_batch_size parameter is not specified for model conversion",
                              "[ERROR] check dynamic batch size failed")
        if (batch,) not in gears.gears:
            shown = "".join(f"[{g[0]}]" for g in gears.gears)
            raise GearRefused("[ERROR] the dymBatch parameter is not correct",
                              f"[ERROR] model has dynamic batch size:{{{shown}}}, please set correct dynamic batch "
                              "size", "[ERROR] check dynamic batch size failed")
        return gears.shapes_at((batch,)), (batch,)
    if hw is not None:
        if gears is None or gears.kind != "image_size":
            raise GearRefused("[ERROR] the dynamic_image_size parameter is not specified for model conversion",
                              "[ERROR] check dynamic image size failed")
        gear = tuple(_numbers(hw))
        if gear not in gears.gears:
            raise GearRefused("[ERROR] the dymHW parameter is not correct", "[ERROR] check dynamic image size failed")
        return gears.shapes_at(gear), gear
    if dims is not None:
        if gears is None or gears.kind != "dims":
            raise GearRefused("[ERROR] the dynamic_dims parameter is not specified for model conversion")
        given = [v for part in dims.split(";") for v in _numbers(part.rpartition(":")[2])]
        for gear in gears.gears:
            if [d for s in gears.shapes_at(gear) for d in s] == given:
                return gears.shapes_at(gear), gear
        raise GearRefused("[ERROR] the dymDims parameter is not correct",
                          "[ERROR] check dynamic dims failed, please set correct dymDims paramenter")
    if shape is not None:
        if gears is None or gears.kind != "range":
            raise GearRefused("[ERROR] aclmdlSetDatasetTensorDesc failed", "[ERROR] set dynamic shape failed")
        named = {part.rpartition(":")[0]: tuple(_numbers(part.rpartition(":")[2])) for part in shape.split(";")}
        if sorted(named) != sorted(gears.names):
            raise GearRefused("[ERROR] the dymShape parameter set error, please check input name",
                              "[ERROR] check dynamic shape failed")
        shapes = tuple(named[name] for name in gears.names)
        for got, bounds in zip(shapes, gears.ranges, strict=True):
            if len(got) != len(bounds) or any(v < lo or (hi != -1 and v > hi) for v, (lo, hi) in
                                              zip(got, bounds, strict=True)):
                raise GearRefused("[ERROR] aclmdlSetDatasetTensorDesc failed", "[ERROR] set dynamic shape failed")
        return shapes, None
    if gears is not None and gears.kind == "dims":
        raise GearRefused("[ERROR] model has dynamic_dims, please add dymDims parameter")
    if gears is not None:
        # Guessed: without the flag the om's dynamic input is never given, so the execution fails.
        raise GearRefused("[ERROR] model execute failed")
    return None, None
