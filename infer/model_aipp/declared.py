"""The declared preprocessing of an AIPP dataset: what the model was trained with, applied to the uint8 bins.

`infer dump-bin` for a model with AIPP writes uint8 source images (resized host-side, nothing else done) and
records its own ``--mean/--std/--scale/--color`` here, independently of the AIPP config. `infer compare` feeds
TensorFlow these bins through `DeclaredPreprocessing.apply` (float64: the exact formula), while the converted
model takes them through AIPP; and checks AIPP's output against it (`infer.compare._judge.aipp_check`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from binio.errors import InferError
from infer.model_aipp.yuv import yuv420sp_to_rgb
from infer.preprocessing import ImageOptions


@dataclass(frozen=True)
class DeclaredPreprocessing:
    """``(pixel * scale - mean) / std`` in `color` order after a centre crop to (height, width), from bins whose
    channels are `source_channels` (RGB, XRGB, RGBX, Y, or NV12/NV21 decoded to RGB with `csc_matrix`)."""

    source_channels: str
    color: str
    scale: float
    mean: tuple[float, ...]
    std: tuple[float, ...]
    height: int
    width: int
    layout: str  # the model input's: NHWC or NCHW
    # NV12/NV21 bins: the YUV->RGB rows (R, G, B) and input bias they were encoded with, decoded exactly
    csc_matrix: tuple[tuple[int, ...], ...] = ()
    csc_bias: tuple[int, ...] = ()

    @staticmethod
    def from_options(options: ImageOptions, source_channels: str, height: int, width: int, layout: str,
                     csc: tuple[tuple[tuple[int, ...], ...], tuple[int, ...]] = ((), ())) -> DeclaredPreprocessing:
        channels = 1 if source_channels == "Y" else 3
        for what, values in (("--mean", options.mean), ("--std", options.std)):
            if len(values) not in (1, channels):
                raise InferError(f"{what} {','.join(f'{v:g}' for v in values)}: expected 1 value or {channels} "
                                 f"(one per channel), found {len(values)}")
        if any(s == 0 for s in options.std):
            raise InferError("--std: a value is 0, which would divide by zero")
        return DeclaredPreprocessing(source_channels=source_channels, color=options.color, scale=options.scale,
                                     mean=options.mean, std=options.std, height=height, width=width, layout=layout,
                                     csc_matrix=csc[0], csc_bias=csc[1])

    @property
    def channels(self) -> int:
        return 1 if self.source_channels == "Y" else 3

    def to_json(self) -> dict[str, Any]:
        found: dict[str, Any] = {
            "source_channels": self.source_channels, "color": self.color, "scale": self.scale,
            "mean": list(self.mean), "std": list(self.std), "crop": "centre", "height": self.height,
            "width": self.width, "layout": self.layout,
            "formula": "(pixel * scale - mean) / std, float64, after a centre crop to height x width"}
        if self.csc_matrix:
            found["yuv_to_rgb"] = {"matrix": [list(r) for r in self.csc_matrix], "input_bias": list(self.csc_bias),
                                   "formula": "rgb = matrix / 256 @ (yuv - input_bias), float64, clipped to 0..255"}
        return found

    @staticmethod
    def from_json(data: dict[str, Any]) -> DeclaredPreprocessing:
        return DeclaredPreprocessing(
            source_channels=str(data["source_channels"]), color=str(data["color"]), scale=float(data["scale"]),
            mean=tuple(float(v) for v in data["mean"]), std=tuple(float(v) for v in data["std"]),
            height=int(data["height"]), width=int(data["width"]), layout=str(data.get("layout", "NHWC")),
            csc_matrix=tuple(tuple(int(x) for x in row) for row in data.get("yuv_to_rgb", {}).get("matrix", [])),
            csc_bias=tuple(int(x) for x in data.get("yuv_to_rgb", {}).get("input_bias", [])))

    def crop_start(self, src_height: int, src_width: int) -> tuple[int, int]:
        """(x, y) of the centre crop in a source of that size."""
        return (src_width - self.width) // 2, (src_height - self.height) // 2

    def apply_nhwc(self, batch: np.ndarray) -> np.ndarray:
        """float64 (N, height, width, C) from uint8 bins (N, H_src, W_src, C_src)."""
        if self.source_channels in ("NV12", "NV21"):
            planes = yuv420sp_to_rgb(batch, self.csc_matrix, self.csc_bias, swap_uv=self.source_channels == "NV21")
        else:
            planes = {"RGB": batch, "XRGB": batch[..., 1:4], "RGBX": batch[..., 0:3],
                      "Y": batch}[self.source_channels]
        left, top = self.crop_start(planes.shape[1], planes.shape[2])
        pixels = planes[:, top:top + self.height, left:left + self.width, :].astype(np.float64)
        if self.color == "BGR" and self.channels == 3:
            pixels = pixels[..., ::-1]
        return (pixels * self.scale - np.asarray(self.mean, dtype=np.float64)) / np.asarray(self.std,
                                                                                             dtype=np.float64)

    def apply(self, batch: np.ndarray) -> np.ndarray:
        """What the frozen model's input takes, in its layout (float64; the caller casts to the input's dtype)."""
        values = self.apply_nhwc(batch)
        return values.transpose(0, 3, 1, 2) if self.layout == "NCHW" else values
