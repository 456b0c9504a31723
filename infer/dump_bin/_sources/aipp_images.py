"""Images for a model input with AIPP: uint8 source images of the AIPP source size, resized host-side only.

AIPP does the rest on the device (swap, crop, colour-space conversion, normalisation), so nothing else is done
here; XRGB8888_U8 sources get their X channel (zeros) where AIPP reads it: first with ax_swap_switch, else last;
YUV420SP_U8 sources are encoded as a decoder of the config's CSC standard would (`infer.model_aipp.yuv`), NV21 where the
config swaps U and V.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from atc_wrap.aipp.config import CSC_MATRICES, AippConfig, csc_rows, csc_standard
from infer.dump_bin._sources.images import ImageFolderSource, ImagePreprocessing
from infer.dump_bin.errors import SourceError
from infer.model_aipp.yuv import rgb_to_yuv420sp
from infer.preprocessing import ImageOptions


def source_channels(config: AippConfig) -> str:
    """How the channels of a source image sit in the bins for `config`'s input format: RGB, XRGB, RGBX, Y, or
    NV12/NV21 (YUV420SP, the U/V order AIPP reads with its swap switch)."""
    if config.input_format == "XRGB8888_U8":
        return "XRGB" if config.ax_swap_switch else "RGBX"
    if config.input_format == "YUV400_U8":
        return "Y"
    if config.input_format == "RGB888_U8":
        return "RGB"
    if csc_standard(config) is None:
        raise SourceError(f"AIPP input format {config.input_format}: its CSC matrix is none of "
                          f"{', '.join(CSC_MATRICES)}, so dump-bin cannot encode images for it",
                          hint="write the YUV420SP_U8 bins with the decoder that feeds the device, as a .npy of "
                               "shape (N, H*3/2, W, 1), and pass that")
    return "NV21" if config.rbuv_swap_switch else "NV12"


def csc_of(config: AippConfig) -> tuple[tuple[tuple[int, int, int], ...], tuple[int, int, int]]:
    """The YUV->RGB rows (R, G, B order) and input bias of a YUV config's standard."""
    found = csc_standard(config)
    assert found is not None  # source_channels refused it
    return csc_rows(found[0], "RGB")


class AippImageSource:
    """An image folder as uint8 samples of `config.input_shape`, for the AIPP input."""

    def __init__(self, folder: Path, config: AippConfig, options: ImageOptions, *, workers: int = 1) -> None:
        self.config = config
        self.layout = source_channels(config)
        width, height = config.src_size
        if options.resize is not None and options.resize < min(height, width):
            raise SourceError(f"--resize {options.resize}: the shorter side would be smaller than the AIPP source "
                              f"size {width}x{height} (w x h)", hint="leave --resize out: just enough for the source")
        prep = ImagePreprocessing(height=height, width=width, channels=1 if self.layout == "Y" else 3,
                                  resize=options.resize, color="RGB", layout="NHWC")
        self.inner = ImageFolderSource(folder, prep, workers=workers)

    @property
    def samples(self) -> int | None:
        return self.inner.samples

    @property
    def sample_shape(self) -> tuple[int, ...]:
        return self.config.input_shape(1)[1:]

    @property
    def description(self) -> str:
        return self.inner.description

    @property
    def preprocessing(self) -> dict[str, Any]:
        found = {**self.inner.preprocessing, "channels_in_bins": self.layout,
                 "aipp": "resized host-side to the AIPP source size; swap, crop, CSC and normalisation on the NPU"}
        for key in ("scale", "mean", "std", "color"):
            found.pop(key, None)  # not done here: the declared preprocessing says what the model was trained with
        return found

    def read(self, start: int, stop: int) -> np.ndarray:
        rows = self.inner.read(start, stop)
        if self.layout in ("XRGB", "RGBX"):
            zeros = np.zeros((*rows.shape[:3], 1), dtype=np.uint8)
            rows = np.concatenate([zeros, rows] if self.layout == "XRGB" else [rows, zeros], axis=3)
        elif self.layout in ("NV12", "NV21"):
            matrix, bias = csc_of(self.config)
            rows = rgb_to_yuv420sp(rows, matrix, bias, swap_uv=self.layout == "NV21")
        return rows

    def close(self) -> None:
        self.inner.close()
