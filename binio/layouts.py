"""The layouts a tensor's dims are named in (model.json, dataset.json, ATC's --input_format). Standard library only:
the options that take a layout are read by `--help`, which imports no numpy."""

from __future__ import annotations

from typing import Literal

from binio.vocabulary import values_of

Layout = Literal["NHWC", "NCHW", "ND"]
LAYOUTS: tuple[str, ...] = values_of(Layout)
ImageLayout = Literal["NHWC", "NCHW"]  # an image input's: channels last or first
