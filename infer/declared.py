"""The declared preprocessing of an AIPP dataset: what the model was trained with, applied to the uint8 bins.

`infer dump-bin` for a model with AIPP writes uint8 source images (resized host-side, nothing else done) and
records its own ``--mean/--std/--scale/--color`` here, independently of the AIPP config. `infer compare` feeds
TensorFlow these bins through `DeclaredPreprocessing.apply` (float64: the exact formula), while the converted
model takes them through AIPP; and checks AIPP's output against it (`infer.compare.aipp_check`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from binio.errors import InferError
from infer.sources.open import ImageOptions

# How the channels of a source image sit in the bins, per AIPP input format (XRGB's X first, RGBX's last).
SOURCE_CHANNELS = {"RGB888_U8": "RGB", "XRGB8888_U8": "XRGB", "YUV400_U8": "Y"}


@dataclass(frozen=True)
class DeclaredPreprocessing:
    """``(pixel * scale - mean) / std`` in `color` order after a centre crop to (height, width), from bins whose
    channels are `source_channels` (RGB, XRGB, RGBX or Y)."""

    source_channels: str
    color: str
    scale: float
    mean: tuple[float, ...]
    std: tuple[float, ...]
    height: int
    width: int
    layout: str  # the model input's: NHWC or NCHW

    @staticmethod
    def from_options(options: ImageOptions, source_channels: str, height: int, width: int,
                     layout: str) -> DeclaredPreprocessing:
        channels = 1 if source_channels == "Y" else 3
        for what, values in (("--mean", options.mean), ("--std", options.std)):
            if len(values) not in (1, channels):
                raise InferError(f"{what} {','.join(f'{v:g}' for v in values)}: expected 1 value or {channels} "
                                 f"(one per channel), found {len(values)}")
        if any(s == 0 for s in options.std):
            raise InferError("--std: a value is 0, which would divide by zero")
        return DeclaredPreprocessing(source_channels=source_channels, color=options.color, scale=options.scale,
                                     mean=options.mean, std=options.std, height=height, width=width, layout=layout)

    @property
    def channels(self) -> int:
        return 1 if self.source_channels == "Y" else 3

    def to_json(self) -> dict[str, Any]:
        return {"source_channels": self.source_channels, "color": self.color, "scale": self.scale,
                "mean": list(self.mean), "std": list(self.std), "crop": "centre", "height": self.height,
                "width": self.width, "layout": self.layout,
                "formula": "(pixel * scale - mean) / std, float64, after a centre crop to height x width"}

    @staticmethod
    def from_json(data: dict[str, Any]) -> DeclaredPreprocessing:
        return DeclaredPreprocessing(
            source_channels=str(data["source_channels"]), color=str(data["color"]), scale=float(data["scale"]),
            mean=tuple(float(v) for v in data["mean"]), std=tuple(float(v) for v in data["std"]),
            height=int(data["height"]), width=int(data["width"]), layout=str(data.get("layout", "NHWC")))

    def crop_start(self, src_height: int, src_width: int) -> tuple[int, int]:
        """(x, y) of the centre crop in a source of that size."""
        return (src_width - self.width) // 2, (src_height - self.height) // 2

    def apply_nhwc(self, batch: np.ndarray) -> np.ndarray:
        """float64 (N, height, width, C) from uint8 bins (N, H_src, W_src, C_src)."""
        planes = {"RGB": batch, "XRGB": batch[..., 1:4], "RGBX": batch[..., 0:3], "Y": batch}[self.source_channels]
        left, top = self.crop_start(batch.shape[1], batch.shape[2])
        pixels = planes[:, top:top + self.height, left:left + self.width, :].astype(np.float64)
        if self.color == "BGR" and self.channels == 3:
            pixels = pixels[..., ::-1]
        return (pixels * self.scale - np.asarray(self.mean, dtype=np.float64)) / np.asarray(self.std,
                                                                                             dtype=np.float64)

    def apply(self, batch: np.ndarray) -> np.ndarray:
        """What the frozen model's input takes, in its layout (float64; the caller casts to the input's dtype)."""
        values = self.apply_nhwc(batch)
        return values.transpose(0, 3, 1, 2) if self.layout == "NCHW" else values
