"""What `infer dump-bin` is asked to do (DumpOptions, with the images' ImageOptions inside): kept apart from the
readers and writers (numpy, PIL), so the command line, the pipeline file and the Python API decode into the same
types without importing them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

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


@dataclass(frozen=True)
class DumpOptions:
    """dump-bin's options; the image preprocessing is `image` ([data.preprocessing] in pipeline.toml)."""

    output: Path = setting(flag="--output", toml=False)
    # (input name, source); an empty name is the lone SOURCE argument
    sources: tuple[tuple[str, str], ...] = setting(flag=False, toml=False)
    dtype: str | None = setting(None, unset="")  # what the user asked for; must equal the model's
    batch: int | None = setting(None, toml=False)
    # NHWC | NCHW, for image sources of a model whose layout is not recorded
    layout: str | None = setting(None, unset="")
    image: ImageOptions = setting(default_factory=ImageOptions, toml="preprocessing", flag=False)
    # the first N samples only; and how many a generator-only dataset has
    samples: int | None = setting(None, toml=False)
    allow_lossy: bool = False
    force: bool = setting(False, toml=False)
    workers: int = setting(1, toml=False)  # image decoding processes
