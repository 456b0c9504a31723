"""AIPP, the NPU's image pre-processing unit: its static configuration, ATC's ``--insert_op_conf`` file.

AIPP takes uint8 images and, in a fixed hardware order, swaps channels (R/B or U/V), crops, converts the colour
space (CSC), normalises each channel as ``(pixel - mean_chn_i - min_chn_i) * var_reci_chn_i`` and pads; the
result is stored as fp16 and fed to the model. It does not resize.

`AippConfig` holds the documented fields of one static ``aipp_op`` block; `aipp_from_preprocessing` maps a
training preprocessing ``(pixel * scale - mean) / std`` onto them, exactly where AIPP can express it, and refuses
what it cannot; `AippConfig.to_prototxt` writes the file ATC reads (`atc_wrap.aipp.parse` reads one back).

Where the facts come from (public sources, read for this module, nothing copied):
- ATC's AIPP guide (CANN docs; also in the GraphEngine repository, ``docs/zh/user_guides/atc_tools/AIPP/``):
  the field names, types and ranges (the configuration-file template), the order swap -> crop -> CSC ->
  mean/normalisation -> padding, the normalisation formula, the CSC formulas with their ``>> 8``, and the
  YUV420SP->RGB/BGR tables for all five standards in `CSC_MATRICES` (BT.601 wide is printed with the same
  numbers as JPEG). Its XRGB8888_U8 table pairs an X-first (XRGB) source with ``ax_swap_switch: true`` and an
  X-last (RGBX) one with ``false``.
- GraphEngine's AIPP insertion (``ge_aipp_op.cc``, mindspore-ai/graphengine): ``aipp_mode`` must be set (an
  unset mode is refused), and with ``csc_switch`` on each missing matrix entry or bias takes a default (BT.601
  narrow YUV->BGR for YUV420SP_U8, RGB->YUV otherwise; biases 16, 128, 128) -- `csc_defaults`.
- The AIPP kernel of Ascend's op library (``aipp_comm.py``): ``min_chn`` and ``var_reci_chn`` are loaded into
  the unit's registers as fp16, ``mean_chn`` as an integer, the matrix as int16 (`held_fp16`).
Not documented, and chosen here: the rounding of ``>> 8`` (a right shift of a signed sum, so floor), the CSC
result saturated to 0..255 (it feeds the uint8 -> fp16 normalisation), the YUV420SP chroma upsampling (each U/V
pair repeated over its 2x2 block), and normalisation computed in float32 before the fp16 store.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from atc_wrap.errors import ConvertError
from binio.dtypes import FP16_MAX
from binio.spec import TensorSpec

INPUT_FORMATS: tuple[str, ...] = ("RGB888_U8", "YUV420SP_U8", "XRGB8888_U8", "YUV400_U8")
YUV_FORMATS: tuple[str, ...] = ("YUV420SP_U8",)
_INPUT_CHANNELS = {"RGB888_U8": 3, "XRGB8888_U8": 4, "YUV400_U8": 1, "YUV420SP_U8": 1}
MEAN_CHN_MAX = 255  # mean_chn holds an integer pixel value; the fractional rest of a mean goes into min_chn

# YUV -> RGB, rows R, G, B, the product shifted right by 8; (matrix rows, input_bias). Swapping rows 0 and 2 gives
# YUV -> BGR. All five are ATC's documented YUV420SP_U8 -> RGB tables (module doc).
CSC_MATRICES: dict[str, tuple[tuple[tuple[int, int, int], ...], tuple[int, int, int]]] = {
    "jpeg": (((256, 0, 359), (256, -88, -183), (256, 454, 0)), (0, 128, 128)),
    "bt601n": (((298, 0, 409), (298, -100, -208), (298, 516, 0)), (16, 128, 128)),
    "bt601w": (((256, 0, 359), (256, -88, -183), (256, 454, 0)), (0, 128, 128)),
    "bt709n": (((298, 0, 459), (298, -55, -136), (298, 541, 0)), (16, 128, 128)),
    "bt709w": (((256, 0, 403), (256, -48, -120), (256, 475, 0)), (0, 128, 128)),
}
# What ATC fills in for a matrix entry or bias left out of a config with csc_switch on (module doc).
_DEFAULT_YUV_TO_BGR = ((298, 516, 0), (298, -100, -208), (298, 0, 409))
_DEFAULT_RGB_TO_YUV = ((66, 129, 25), (-38, -74, 112), (112, -94, -18))
DEFAULT_CSC_BIAS = (16, 128, 128)


def csc_defaults(input_format: str) -> tuple[tuple[int, int, int], ...]:
    """The matrix ATC uses, entry by entry, where a config with csc_switch on leaves one out."""
    return _DEFAULT_YUV_TO_BGR if input_format in YUV_FORMATS else _DEFAULT_RGB_TO_YUV


def held_fp16(values: Sequence[float]) -> tuple[float, ...]:
    """`values` as AIPP's registers hold min_chn and var_reci_chn: rounded to fp16 (module doc)."""
    import numpy as np

    return tuple(float(v) for v in np.asarray(values, dtype=np.float64).astype(np.float16))


@dataclass(frozen=True)
class AippConfig:
    """One static ``aipp_op`` block, with ATC's field names and defaults (switches off, var_reci 1.0)."""

    input_format: str = "RGB888_U8"
    related_input_rank: int = 0
    src_image_size_w: int = 0  # 0: the model input's width (no crop)
    src_image_size_h: int = 0
    crop: bool = False
    load_start_pos_w: int = 0
    load_start_pos_h: int = 0
    crop_size_w: int = 0
    crop_size_h: int = 0
    rbuv_swap_switch: bool = False
    ax_swap_switch: bool = False
    csc_switch: bool = False
    matrix: tuple[tuple[int, int, int], ...] = ((0, 0, 0), (0, 0, 0), (0, 0, 0))
    input_bias: tuple[int, int, int] = (0, 0, 0)
    output_bias: tuple[int, int, int] = (0, 0, 0)
    mean_chn: tuple[int, int, int, int] = (0, 0, 0, 0)
    min_chn: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)
    var_reci_chn: tuple[float, float, float, float] = (1.0, 1.0, 1.0, 1.0)
    aipp_mode: str = field(default="static", init=False)

    @property
    def is_yuv(self) -> bool:
        return self.input_format in YUV_FORMATS

    @property
    def input_channels(self) -> int:
        """Channels of the uint8 input as fed (YUV420SP: one plane of H*3/2 rows)."""
        return _INPUT_CHANNELS[self.input_format]

    @property
    def output_channels(self) -> int:
        return 1 if self.input_format == "YUV400_U8" else 3

    @property
    def src_size(self) -> tuple[int, int]:
        """(width, height) of the source image."""
        return self.src_image_size_w, self.src_image_size_h

    @property
    def out_size(self) -> tuple[int, int]:
        """(width, height) of what AIPP hands the model."""
        return (self.crop_size_w, self.crop_size_h) if self.crop else self.src_size

    def input_shape(self, batch: int) -> tuple[int, ...]:
        """The uint8 NHWC input the converted model takes: YUV420SP_U8 as its Y plane over its interleaved
        UV plane (NV12, NV21 with rbuv_swap_switch), ``(N, H*3/2, W, 1)``."""
        width, height = self.src_size
        if self.input_format == "YUV420SP_U8":
            return (batch, height * 3 // 2, width, 1)
        return (batch, height, width, self.input_channels)

    def offsets(self) -> tuple[float, ...]:
        """What is subtracted from each output channel: ``mean_chn_i + min_chn_i``."""
        return tuple(self.mean_chn[c] + self.min_chn[c] for c in range(self.output_channels))

    def to_json(self) -> dict[str, Any]:
        found = asdict(self)
        for key in ("matrix", "input_bias", "output_bias", "mean_chn", "min_chn", "var_reci_chn"):
            value = found[key]
            found[key] = [list(row) for row in value] if key == "matrix" else list(value)
        return found

    @staticmethod
    def from_json(data: dict[str, Any]) -> AippConfig:
        values = {k: v for k, v in data.items() if k != "aipp_mode"}
        values["matrix"] = tuple(tuple(int(x) for x in row) for row in values.get("matrix", ((0,) * 3,) * 3))
        for key, kind in (("input_bias", int), ("output_bias", int), ("mean_chn", int), ("min_chn", float),
                          ("var_reci_chn", float)):
            if key in values:
                values[key] = tuple(kind(x) for x in values[key])
        return AippConfig(**values)

    def to_prototxt(self, header: Sequence[str] = ()) -> str:
        """ATC's ``--insert_op_conf`` file: one ``aipp_op`` block, every field written out."""
        def flag(value: bool) -> str:
            return "true" if value else "false"

        lines = [f"# {line}" for line in header]
        lines += ["aipp_op {", "    aipp_mode: static", f"    related_input_rank: {self.related_input_rank}",
                  f"    input_format: {self.input_format}", f"    src_image_size_w: {self.src_image_size_w}",
                  f"    src_image_size_h: {self.src_image_size_h}", f"    crop: {flag(self.crop)}"]
        if self.crop:
            lines += [f"    load_start_pos_w: {self.load_start_pos_w}",
                      f"    load_start_pos_h: {self.load_start_pos_h}",
                      f"    crop_size_w: {self.crop_size_w}", f"    crop_size_h: {self.crop_size_h}"]
        lines.append(f"    rbuv_swap_switch: {flag(self.rbuv_swap_switch)}")
        if self.input_format == "XRGB8888_U8":
            lines.append(f"    ax_swap_switch: {flag(self.ax_swap_switch)}")
        lines.append(f"    csc_switch: {flag(self.csc_switch)}")
        if self.csc_switch:
            lines += [f"    matrix_r{r}c{c}: {self.matrix[r][c]}" for r in range(3) for c in range(3)]
            # both biases written: ATC fills a left-out one with its default, not 0
            lines += [f"    input_bias_{i}: {self.input_bias[i]}" for i in range(3)]
            lines += [f"    output_bias_{i}: {self.output_bias[i]}" for i in range(3)]
        for c in range(self.output_channels):
            lines += [f"    mean_chn_{c}: {self.mean_chn[c]}", f"    min_chn_{c}: {_decimal(self.min_chn[c])}",
                      f"    var_reci_chn_{c}: {_decimal(self.var_reci_chn[c])}"]
        lines.append("}")
        return "\n".join(lines) + "\n"


def _decimal(value: float) -> str:
    """The shortest text that reads back as the same float64 (repr), always with a decimal point."""
    text = repr(float(value))
    return text if any(ch in text for ch in ".en") else text + ".0"


def resolve_sizes(config: AippConfig, height: int, width: int) -> AippConfig:
    """Fills a source size of 0 with the model input's size, as ATC does."""
    return replace(config, src_image_size_w=config.src_image_size_w or width,
                   src_image_size_h=config.src_image_size_h or height)


def check_against_input(config: AippConfig, input_name: str, height: int, width: int, channels: int,
                        where: str) -> AippConfig:
    """The config, its sizes resolved, after refusing what would not give the model input (H, W, C): the output
    size and channels, a crop window outside the source, odd YUV420SP sizes or crop positions."""
    if config.crop and 0 in config.src_size:
        raise ConvertError(f"{where}: src_image_size_w/h 0 with crop: true; ATC reads 0 as the model's size only "
                           "with crop and padding off", hint="give the source image's size")
    config = resolve_sizes(config, height, width)
    if config.crop and 0 in (config.crop_size_w, config.crop_size_h):  # ATC: 0 (or absent) is the model's size
        config = replace(config, crop_size_w=config.crop_size_w or width, crop_size_h=config.crop_size_h or height)
    if config.output_channels != channels:
        raise ConvertError(f"{where}: input_format {config.input_format} gives {config.output_channels} channel(s), "
                           f"input {input_name} takes {channels}",
                           hint="RGB888_U8, XRGB8888_U8 and YUV420SP_U8 give 3 channels, YUV400_U8 gives 1")
    if config.out_size != (width, height):
        what = "crop_size" if config.crop else "src_image_size (crop: false)"
        raise ConvertError(f"{where}: AIPP hands the model {config.out_size[0]}x{config.out_size[1]} (w x h, its "
                           f"{what}), input {input_name} takes {width}x{height}",
                           hint="AIPP does not resize: resize host-side to the source size, crop to the model's")
    if config.crop:
        right = config.load_start_pos_w + config.crop_size_w
        bottom = config.load_start_pos_h + config.crop_size_h
        if right > config.src_image_size_w or bottom > config.src_image_size_h:
            raise ConvertError(f"{where}: the crop window ends at ({right}, {bottom}), outside the "
                               f"{config.src_image_size_w}x{config.src_image_size_h} source (w x h): "
                               "load_start_pos + crop_size must not pass src_image_size")
    if config.input_format == "YUV420SP_U8":
        odd = [name for name, value in (("src_image_size_w", config.src_image_size_w),
                                        ("src_image_size_h", config.src_image_size_h),
                                        ("load_start_pos_w", config.load_start_pos_w),
                                        ("load_start_pos_h", config.load_start_pos_h)) if value % 2]
        if odd:
            raise ConvertError(f"{where}: {', '.join(odd)} odd; YUV420SP_U8 shares each U/V pair between 2x2 "
                               "pixels, so sizes and crop positions must be even")
    if config.csc_switch and config.input_format == "YUV400_U8":
        raise ConvertError(f"{where}: csc_switch true with input_format YUV400_U8 (a single plane has no colour "
                           "to convert)")
    return config


@dataclass(frozen=True)
class Normalisation:
    """``(pixel * scale - mean) / std`` per channel, the training preprocessing AIPP is to reproduce."""

    scale: float
    mean: tuple[float, ...]
    std: tuple[float, ...]

    def per_channel(self, channels: int) -> tuple[tuple[float, float], ...]:
        """(offset, var_reci) per channel: ``(pixel - offset) * var_reci`` equals the formula above."""
        def pick(values: tuple[float, ...], c: int) -> float:
            return values[c] if len(values) > 1 else values[0]

        return tuple((pick(self.mean, c) / self.scale, self.scale / pick(self.std, c)) for c in range(channels))


def split_offset(offset: float, channel: int) -> tuple[int, float]:
    """An offset as AIPP holds it: the integer ``mean_chn`` (0..255) and the rest in ``min_chn`` (>= 0)."""
    if not math.isfinite(offset) or offset < 0:
        raise ConvertError(f"channel {channel}: mean / scale = {offset:g} cannot be expressed in AIPP: mean_chn and "
                           "min_chn only subtract (a negative mean, or a negative --scale, would need to add)",
                           hint="keep this preprocessing host-side: convert without --aipp")
    mean_chn = min(MEAN_CHN_MAX, math.floor(offset))
    rest = offset - mean_chn
    if rest > MEAN_CHN_MAX:
        raise ConvertError(f"channel {channel}: mean / scale = {offset:g} is past what mean_chn (0..255) plus "
                           "min_chn can subtract in pixel units", hint="keep this preprocessing host-side")
    return mean_chn, rest


def csc_rows(standard: str, color: str) -> tuple[tuple[tuple[int, int, int], ...], tuple[int, int, int]]:
    """The YUV->RGB (or ->BGR) matrix rows and input bias of a `CSC_MATRICES` standard."""
    if standard not in CSC_MATRICES:
        raise ConvertError(f"--aipp-csc {standard}: expected one of {', '.join(CSC_MATRICES)}")
    rows, bias = CSC_MATRICES[standard]
    return (tuple(reversed(rows)) if color == "BGR" else rows), bias


def csc_standard(config: AippConfig) -> tuple[str, str] | None:
    """(standard, colour order of the matrix rows) of a YUV config's CSC, when it is one of `CSC_MATRICES`."""
    if not (config.is_yuv and config.csc_switch):
        return None
    for name in CSC_MATRICES:
        for color in ("RGB", "BGR"):
            rows, bias = csc_rows(name, color)
            if rows == config.matrix and bias == config.input_bias:
                return name, color
    return None


def aipp_from_preprocessing(*, input_format: str, height: int, width: int, channels: int, color: str,
                            normalisation: Normalisation, src_size: tuple[int, int] | None = None,
                            crop_start: tuple[int, int] | None = None, csc: str | None = None,
                            related_input_rank: int = 0) -> AippConfig:
    """The AIPP config that turns a uint8 source image into ``(pixel * scale - mean) / std`` in `color` order
    for a model input of (height, width, channels); refuses what AIPP cannot express, naming the setting.

    The mapping is exact in real arithmetic: ``offset = mean / scale`` (its integer part, up to 255, in
    ``mean_chn``, the rest in ``min_chn``) and ``var_reci = scale / std``. What is left is fp16: the registers
    holding min_chn and var_reci, and the output. RGB888_U8 and XRGB8888_U8 (X first, so ``ax_swap_switch``
    on) sources are RGB: `color` BGR turns ``rbuv_swap_switch`` on. YUV420SP_U8 sources are converted by the
    `csc` standard's matrix (rows in `color` order). A source larger than the model input is
    cropped at `crop_start` (x, y), by default centred (even positions for YUV420SP).
    """
    if input_format not in INPUT_FORMATS:
        raise ConvertError(f"--aipp-input-format {input_format}: expected one of {', '.join(INPUT_FORMATS)}")
    if color not in ("RGB", "BGR"):
        raise ConvertError(f"--color {color}: expected RGB or BGR")
    if normalisation.scale == 0 or not math.isfinite(normalisation.scale):
        raise ConvertError(f"--scale {normalisation.scale:g}: AIPP's var_reci_chn = scale / std needs a finite, "
                           "non-zero scale")
    if any(s == 0 for s in normalisation.std):
        raise ConvertError("--std: a value is 0, which would divide by zero")
    for what, values in (("--mean", normalisation.mean), ("--std", normalisation.std)):
        if len(values) not in (1, channels):
            raise ConvertError(f"{what}: {len(values)} values, the model input has {channels} channel(s)")
    if csc is not None and input_format not in YUV_FORMATS:
        raise ConvertError(f"--aipp-csc {csc}: a colour-space conversion is for YUV420SP_U8 sources; "
                           f"{input_format} needs none")
    src_w, src_h = src_size if src_size is not None else (width, height)
    cropped = (src_w, src_h) != (width, height)
    if crop_start is not None and not cropped and crop_start != (0, 0):
        raise ConvertError(f"--aipp-crop {crop_start[0]},{crop_start[1]}: the source is the model input's size "
                           f"({width}x{height}); give --aipp-src-size for a larger source to crop from")
    if src_w < width or src_h < height:
        raise ConvertError(f"--aipp-src-size {src_w},{src_h}: smaller than the model input {width}x{height} "
                           "(w x h); AIPP crops and pads but does not resize")
    even = 2 if input_format in YUV_FORMATS else 1
    start = crop_start if crop_start is not None else (
        (src_w - width) // 2 // even * even, (src_h - height) // 2 // even * even)
    matrix: tuple[tuple[int, int, int], ...] = ((0, 0, 0), (0, 0, 0), (0, 0, 0))
    bias = (0, 0, 0)
    if input_format in YUV_FORMATS:
        matrix, bias = csc_rows(csc or "jpeg", color)
    out_channels = 1 if input_format == "YUV400_U8" else 3
    means, mins, recis = [0, 0, 0, 0], [0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0]
    for c, (offset, reci) in enumerate(normalisation.per_channel(out_channels)):
        means[c], mins[c] = split_offset(offset, c)
        if not abs(reci) <= FP16_MAX:
            raise ConvertError(f"channel {c}: var_reci_chn = scale / std = {reci:g} is past fp16's range")
        recis[c] = reci
    config = AippConfig(
        input_format=input_format, related_input_rank=related_input_rank, src_image_size_w=src_w,
        src_image_size_h=src_h, crop=cropped, load_start_pos_w=start[0] if cropped else 0,
        load_start_pos_h=start[1] if cropped else 0, crop_size_w=width if cropped else 0,
        crop_size_h=height if cropped else 0,
        rbuv_swap_switch=color == "BGR" and input_format in ("RGB888_U8", "XRGB8888_U8"),
        ax_swap_switch=input_format == "XRGB8888_U8",  # ATC's XRGB8888_U8 -> RGB table: X first needs the swap
        csc_switch=input_format in YUV_FORMATS, matrix=matrix, input_bias=bias,
        mean_chn=(means[0], means[1], means[2], means[3]), min_chn=(mins[0], mins[1], mins[2], mins[3]),
        var_reci_chn=(recis[0], recis[1], recis[2], recis[3]),
    )
    return check_against_input(config, f"input {related_input_rank}", height, width, channels, "--aipp")


def aipp_input_spec(spec: TensorSpec, aipp: AippConfig) -> TensorSpec:
    """The uint8 NHWC input of the source size that AIPP makes of a model input."""
    batch = spec.shape[0] if spec.shape else None
    return TensorSpec(name=spec.name, dtype="uint8", shape=(batch, *aipp.input_shape(1)[1:]), layout="NHWC")
