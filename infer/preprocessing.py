"""The image preprocessing a model was trained with, as the user declares it (`ImageOptions`): shared by dump-bin
(host-side, on the images it reads), convert --aipp (the NPU does it, from the same numbers) and the pipeline file's
[data.preprocessing]. Standard library only: the options modules import it, and `infer --help` must not import
numpy."""

from __future__ import annotations

from dataclasses import dataclass

from binio.errors import InferError
from infer._option_fields import setting

COLORS = ("RGB", "BGR")


@dataclass(frozen=True)
class ImageOptions:
    """The image preprocessing a user chose; the crop size and channels come from the model's input shape.
    In pipeline.toml: [data.preprocessing]."""

    resize: int | None = setting(None, unset=0, help="shorter side before the crop; 0 = just large enough")
    color: str = setting("RGB", help="or BGR")
    scale: float = 1.0
    mean: tuple[float, ...] = setting((0.0,), help="one value, or one per channel")
    std: tuple[float, ...] = (1.0,)

    def __post_init__(self) -> None:
        # One check for every caller (command line, pipeline file, Python): "bgr" is BGR, "GBR" is refused.
        if self.color.upper() not in COLORS:
            raise InferError(f"--color {self.color}: expected RGB or BGR")
        object.__setattr__(self, "color", self.color.upper())
