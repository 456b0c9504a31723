"""The AIPP an om carries, as the `AippConfig` infer's AIPP path uses (dump-bin's uint8 images, compare's check of
AIPP against the declared preprocessing), where the om's parameters are ones that path follows.

GE stores an input's AIPP as the NamedAttrs ``aipp`` of its Data op, one attribute per field of the aipp.cfg
(graphengine 5c7fe0e, ``ge/graph/preprocess/insert_op/ge_aipp_op.cc``, ``AippOp::ConvertParamToAttr``): aipp_mode
and input_format as the numbers of insert_op.proto's enums, the switches as bools, var_reci_chn_*, matrix_r*c*,
input_bias_* and output_bias_* as lists (one value per batch of a dynamic AIPP), the rest as plain numbers. No public
om carries AIPP: this mapping follows the source alone.
"""

from __future__ import annotations

from typing import Any

from atc_wrap.aipp.config import INPUT_FORMATS, AippConfig

# insert_op.proto (graphengine 82d489a, ge/common/proto/insert_op.proto): AippOpParams.InputFormat, AippMode.
_INPUT_FORMAT_NUMBERS = {1: "YUV420SP_U8", 2: "XRGB8888_U8", 3: "RGB888_U8", 4: "YUV400_U8"}
_STATIC_MODE = 1
_UNFOLLOWED = ("resize", "padding")  # AIPP steps infer's AIPP path does not emulate


def _first(value: Any, default: Any) -> Any:
    """A list attribute's first value (a static AIPP has one), or a plain one."""
    if isinstance(value, list):
        return value[0] if value else default
    return default if value is None else value


def aipp_from_om(params: dict[str, Any]) -> tuple[AippConfig | None, str]:
    """(the config, "") for a static AIPP of a kind infer follows; (None, why not) otherwise."""
    mode = _first(params.get("aipp_mode"), 0)
    if mode != _STATIC_MODE:
        return None, f"aipp_mode {mode} (only static AIPP, mode {_STATIC_MODE}, is followed)"
    number = _first(params.get("input_format"), 0)
    input_format = _INPUT_FORMAT_NUMBERS.get(number) if isinstance(number, int) else None
    if input_format is None or input_format not in INPUT_FORMATS:
        return None, f"input_format {number} (followed: {', '.join(INPUT_FORMATS)})"
    used = [step for step in _UNFOLLOWED if _first(params.get(step), False) is True]
    if used:
        return None, f"{' and '.join(used)} switched on (not emulated here)"

    def integer(key: str, default: int = 0) -> int:
        value = _first(params.get(key), default)
        return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else default

    def number_of(key: str, default: float) -> float:
        value = _first(params.get(key), default)
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else default

    def switch(key: str) -> bool:
        return _first(params.get(key), False) is True

    try:
        config = AippConfig(
            input_format=input_format, related_input_rank=integer("related_input_rank"),
            src_image_size_w=integer("src_image_size_w"), src_image_size_h=integer("src_image_size_h"),
            crop=switch("crop"), load_start_pos_w=integer("load_start_pos_w"),
            load_start_pos_h=integer("load_start_pos_h"), crop_size_w=integer("crop_size_w"),
            crop_size_h=integer("crop_size_h"), rbuv_swap_switch=switch("rbuv_swap_switch"),
            ax_swap_switch=switch("ax_swap_switch"), csc_switch=switch("csc_switch"),
            matrix=tuple((integer(f"matrix_r{r}c0"), integer(f"matrix_r{r}c1"), integer(f"matrix_r{r}c2"))
                         for r in range(3)),
            input_bias=(integer("input_bias_0"), integer("input_bias_1"), integer("input_bias_2")),
            output_bias=(integer("output_bias_0"), integer("output_bias_1"), integer("output_bias_2")),
            mean_chn=(integer("mean_chn_0"), integer("mean_chn_1"), integer("mean_chn_2"), integer("mean_chn_3")),
            min_chn=(number_of("min_chn_0", 0.0), number_of("min_chn_1", 0.0), number_of("min_chn_2", 0.0),
                     number_of("min_chn_3", 0.0)),
            var_reci_chn=(number_of("var_reci_chn_0", 1.0), number_of("var_reci_chn_1", 1.0),
                          number_of("var_reci_chn_2", 1.0), number_of("var_reci_chn_3", 1.0)))
    except (TypeError, ValueError) as err:
        return None, f"parameters this toolkit cannot take ({err})"
    return config, ""
