"""The image preprocessing a model was trained with, as the user declares it (`ImageOptions`): shared by dump-bin
(host-side, on the images it reads), convert --aipp (the NPU does it, from the same numbers) and the pipeline file's
[data.preprocessing]. Standard library only: the options modules import it, and `infer --help` must not import
numpy."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from binio.errors import InferError
from binio.texts import floats
from binio.vocabulary import values_of
from infer._option_fields import setting

Color = Literal["RGB", "BGR"]  # the channel order of a model's images
COLORS: tuple[str, ...] = values_of(Color)


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
