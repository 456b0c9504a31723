"""What `infer dump-bin` is asked to do with images: kept apart from the readers (numpy, PIL), so the command line,
the pipeline file and the Python API decode into the same type without importing them."""

from __future__ import annotations

from dataclasses import dataclass

from binio.errors import InferError
from infer.option_fields import setting

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
