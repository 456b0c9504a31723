"""What `infer convert --aipp` is asked (`AippOptions`): kept apart from the config it makes (atc_wrap, numpy), so
the command line and the pipeline file decode into it without importing them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from atc_wrap.errors import ConvertError
from binio.texts import whole_pair
from infer._option_fields import setting
from infer.preprocessing import ImageOptions


def _pair_key(example: str) -> Callable[[Any, str], tuple[int, int] | None]:
    """A [convert] key holding a pair, ``aipp_src_size = [256, 256]`` ([] for none), read and checked."""

    def read(value: Any, where: str) -> tuple[int, int] | None:
        if value == []:
            return None
        if not (isinstance(value, list) and len(value) == 2 and all(
                isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value)):
            raise ConvertError(f"{where} = {value!r}: expected two whole numbers, e.g. {example}")
        return value[0], value[1]

    return read


@dataclass(frozen=True)
class AippOptions:
    """AIPP for `infer convert`: made from `preprocessing` (mean, std, scale, color; its resize stays host-side),
    or read from a hand-written `config` file. In pipeline.toml: [convert] aipp = true and the aipp_* keys, the
    preprocessing from [data.preprocessing]."""

    preprocessing: ImageOptions = setting(default_factory=ImageOptions, toml=False, only=("color", "scale", "mean",
                                                                                          "std"),
                                          help="[data.preprocessing]'s, in pipeline.toml")
    input_format: str = setting("", flag="--aipp-input-format", toml="aipp_input_format",
                                shown="RGB888_U8 (YUV400_U8 for 1 channel)",
                                help="The uint8 images' format: RGB888_U8, YUV420SP_U8, XRGB8888_U8 or YUV400_U8.")
    src_size: tuple[int, int] | None = setting(None, flag="--aipp-src-size", toml="aipp_src_size", unset=[],
                                               parse=whole_pair("256,256"), decode=_pair_key("[256, 256]"),
                                               shown="the model input's size",
                                               help="W,H of the uint8 source images.")
    crop: tuple[int, int] | None = setting(None, flag="--aipp-crop", toml="aipp_crop", unset=[],
                                           parse=whole_pair("16,16"), decode=_pair_key("[16, 16]"),
                                           shown="centred", help="X,Y of the crop window in the source.")
    csc: str | None = setting(None, flag="--aipp-csc", toml="aipp_csc", unset="", shown="jpeg",
                              help="YUV420SP_U8's colour-space conversion: jpeg, bt601n, bt601w, bt709n or bt709w.")
    config: Path | None = setting(None, flag="--aipp-config", toml="aipp_config", unset="", enables=True,
                                  help="A hand-written AIPP config (static aipp_op) instead of the settings above; "
                                       "in pipeline.toml relative to the file.")
    input_rank: int = setting(0, flag=False, toml=False)  # which model input (related_input_rank)

    def check(self) -> None:
        if self.config is not None:
            given = [flag for flag, present in (
                ("--mean", self.preprocessing.mean != (0.0,)), ("--std", self.preprocessing.std != (1.0,)),
                ("--scale", self.preprocessing.scale != 1.0), ("--color", self.preprocessing.color != "RGB"),
                ("--aipp-input-format", bool(self.input_format)), ("--aipp-src-size", self.src_size is not None),
                ("--aipp-crop", self.crop is not None), ("--aipp-csc", self.csc is not None)) if present]
            if given:
                raise ConvertError(f"--aipp-config {self.config} with {', '.join(given)}: the file holds every AIPP "
                                   "setting; give one or the other")


