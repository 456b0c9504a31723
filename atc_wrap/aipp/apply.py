"""AIPP computed in numpy: what the NPU hands the model for a batch of uint8 source images.

The hardware order: channel swap -> crop -> colour-space conversion -> normalisation, stored as fp16 (padding is
not handled). The CSC is integer arithmetic: ``(M @ (yuv - input_bias)) >> 8`` for YUV sources,
``((M @ rgb) >> 8) + output_bias`` for RGB ones, an arithmetic shift (floor), then clipped to 0..255 (both
assumptions: see `atc_wrap.aipp.config`). min_chn and var_reci_chn are used as the unit holds them, rounded to fp16.
The ONNX stand-in's AIPP stage (`atc_wrap.aipp.onnx_stage`) computes the same.
"""

from __future__ import annotations

import numpy as np

from atc_wrap.aipp.config import AippConfig, held_fp16


def planes(config: AippConfig, batch: np.ndarray) -> np.ndarray:
    """The source as (N, H, W, C) channels before any swap: YUV420SP's chroma repeated over its 2x2 blocks,
    XRGB's X channel dropped (X first with ax_swap_switch, as ATC's XRGB table has it; X last, RGBX, without)."""
    if config.input_format == "YUV420SP_U8":
        height = batch.shape[1] * 2 // 3
        y = batch[:, :height, :, 0]
        uv = batch[:, height:, :, 0].reshape(batch.shape[0], height // 2, -1, 2)
        uv = uv.repeat(2, axis=1).repeat(2, axis=2)
        return np.concatenate([y[..., None], uv], axis=3)
    if config.input_format == "XRGB8888_U8":
        return batch[..., 1:4] if config.ax_swap_switch else batch[..., 0:3]
    return batch


def swap_indices(config: AippConfig) -> list[int]:
    """Channel order after rbuv_swap_switch: R<->B for RGB sources, U<->V for YUV ones."""
    if config.output_channels == 1 or not config.rbuv_swap_switch:
        return list(range(config.output_channels))
    return [0, 2, 1] if config.is_yuv else [2, 1, 0]


def apply_aipp(config: AippConfig, batch: np.ndarray) -> np.ndarray:
    """float16 (N, h, w, C): AIPP's output for the uint8 `batch` in the shape `config.input_shape` names."""
    pixels = planes(config, batch).astype(np.float32)[..., swap_indices(config)]
    if config.crop:
        top, left = config.load_start_pos_h, config.load_start_pos_w
        pixels = pixels[:, top:top + config.crop_size_h, left:left + config.crop_size_w, :]
    if config.csc_switch:
        matrix = np.asarray(config.matrix, dtype=np.float32)
        if config.is_yuv:
            product = (pixels - np.asarray(config.input_bias, dtype=np.float32)) @ matrix.T
            pixels = np.floor(product / 256)
        else:
            pixels = np.floor((pixels @ matrix.T) / 256) + np.asarray(config.output_bias, dtype=np.float32)
        pixels = np.clip(pixels, 0, 255)
    channels = config.output_channels
    mean = np.asarray(config.mean_chn[:channels], dtype=np.float32)
    minimum = np.asarray(held_fp16(config.min_chn[:channels]), dtype=np.float32)
    reci = np.asarray(held_fp16(config.var_reci_chn[:channels]), dtype=np.float32)
    return (((pixels - mean) - minimum) * reci).astype(np.float16)
