"""What `infer dump-bin` is asked to do (DumpOptions, with the images' `infer.preprocessing.ImageOptions` inside):
kept apart from the readers and writers (numpy, PIL), so the command line, the pipeline file and the Python API
decode into the same types without importing them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from infer._option_fields import setting
from infer.preprocessing import ImageOptions


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
