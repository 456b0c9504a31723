"""RGB images as YUV420SP (NV12/NV21) bins and back, with the YUV->RGB matrix of an AIPP CSC standard.

dump-bin encodes with the inverse of the very matrix AIPP decodes with (the standard's integer rows / 256), so
the bins are what a decoder of that standard hands the device, up to rounding to uint8 and the 4:2:0 chroma
(each U/V pair the mean of its 2x2 block). The declared preprocessing decodes them exactly (float64), where AIPP
decodes in integers (``>> 8``): the two differ by less than one pixel unit per channel.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def _matrix(rows: Sequence[Sequence[int]]) -> np.ndarray:
    return np.asarray(rows, dtype=np.float64) / 256.0


def rgb_to_yuv420sp(rgb: np.ndarray, rows: Sequence[Sequence[int]], bias: Sequence[int], *,
                    swap_uv: bool) -> np.ndarray:
    """uint8 (N, H*3/2, W, 1) from uint8 RGB (N, H, W, 3): the Y plane over the interleaved UV plane (VU with
    `swap_uv`, NV21). `rows` decode YUV to RGB (R, G, B rows), `bias` is their input bias."""
    n, height, width, _ = rgb.shape
    yuv = rgb.astype(np.float64) @ np.linalg.inv(_matrix(rows)).T + np.asarray(bias, dtype=np.float64)
    luma = np.clip(np.rint(yuv[..., 0]), 0, 255)
    chroma = yuv[..., 1:].reshape(n, height // 2, 2, width // 2, 2, 2).mean(axis=(2, 4))
    chroma = np.clip(np.rint(chroma), 0, 255)
    if swap_uv:
        chroma = chroma[..., ::-1]
    plane = chroma.reshape(n, height // 2, width)  # U0 V0 U1 V1 ... per row of 2x2 blocks
    return np.concatenate([luma, plane], axis=1).astype(np.uint8)[..., None]


def yuv420sp_to_rgb(planes: np.ndarray, rows: Sequence[Sequence[int]], bias: Sequence[int], *,
                    swap_uv: bool) -> np.ndarray:
    """float64 RGB (N, H, W, 3) from uint8 (N, H*3/2, W, 1), decoded exactly and clipped to 0..255; each U/V pair
    serves its 2x2 block."""
    height = planes.shape[1] * 2 // 3
    luma = planes[:, :height, :, 0].astype(np.float64)
    chroma = planes[:, height:, :, 0].reshape(planes.shape[0], height // 2, -1, 2).astype(np.float64)
    if swap_uv:
        chroma = chroma[..., ::-1]
    chroma = chroma.repeat(2, axis=1).repeat(2, axis=2)
    yuv = np.concatenate([luma[..., None], chroma], axis=3) - np.asarray(bias, dtype=np.float64)
    return np.clip(yuv @ _matrix(rows).T, 0, 255)
