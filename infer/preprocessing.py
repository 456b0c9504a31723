"""The image preprocessing a model was trained with, as the user declares it (`ImageOptions`): shared by dump-bin
(host-side, on the images it reads), convert --aipp (the NPU does it, from the same numbers) and the pipeline file's
[data.preprocessing]. Standard library only: the options modules import it, and `infer --help` must not import
numpy."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from binio.errors import InferError
from binio.limits import check_count
from binio.texts import floats
from binio.vocabulary import values_of
from infer._option_fields import setting

Color = Literal["RGB", "BGR"]  # the channel order of a model's images
COLORS: tuple[str, ...] = values_of(Color)
MAX_RESIZE = 9459  # the side of a square of Pillow's 89,478,485 pixels, the most an image is resized to


def _numbers(values: tuple[float, ...]) -> str:
    return ",".join(f"{v:g}" for v in values)


@dataclass(frozen=True)
class ImageOptions:
    """The image preprocessing a user chose; the crop size and channels come from the model's input shape.
    In pipeline.toml: [data.preprocessing]."""

    resize: int | None = setting(None, unset=0, shown="just large enough for the crop",
                                 help="Images: the shorter side is resized to this before the centre crop.")
    color: Color = setting("RGB", help="The channel order the model was trained on (images are read as RGB; any "
                                       "case).")
    scale: float = setting(1.0, help="Pixels are multiplied by this first (e.g. 0.00392 for 1/255).")
    mean: tuple[float, ...] = setting((0.0,), parse=floats,
                                      help="Subtracted after the scale: one value, or one per channel.")
    std: tuple[float, ...] = setting((1.0,), parse=floats,
                                     help="Divided by after the mean: one value, or one per channel.")

    def __post_init__(self) -> None:
        # One check for every caller (command line, pipeline file, Python): "bgr" is BGR, "GBR" is refused.
        if self.color.upper() not in COLORS:
            raise InferError(f"--color {self.color}: expected RGB or BGR")
        object.__setattr__(self, "color", self.color.upper())
        if not (math.isfinite(self.scale) and self.scale != 0):
            raise InferError(f"--scale {self.scale:g}: expected a finite number other than 0 (1/255 is 0.00392)")
        if not self.mean or not all(math.isfinite(m) for m in self.mean):
            raise InferError(f"--mean {_numbers(self.mean)}: expected finite numbers, one or one per channel")
        if not self.std or not all(math.isfinite(s) and s > 0 for s in self.std):
            raise InferError(f"--std {_numbers(self.std)}: expected numbers more than 0 (a standard deviation), one "
                             "or one per channel")
        if self.resize is not None and self.resize > MAX_RESIZE:  # too small is the crop's to say (dump-bin)
            check_count(self.resize, "--resize", most=MAX_RESIZE, why="the shorter side in pixels: a square image "
                        "resized to it is already Pillow's limit of pixels")
