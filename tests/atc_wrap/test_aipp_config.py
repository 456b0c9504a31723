"""AIPP configs: the training preprocessing mapped onto AIPP's fields, written, read back, and refused by name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from atc_wrap.aipp.config import CSC_MATRICES, AippConfig, Normalisation, aipp_from_preprocessing, check_against_input
from atc_wrap.aipp.parse import parse_aipp_text
from atc_wrap.errors import ConvertError


def _generated(**overrides: Any) -> AippConfig:
    values: dict[str, Any] = {
        "input_format": "RGB888_U8", "height": 224, "width": 224, "channels": 3, "color": "RGB",
        "normalisation": Normalisation(scale=1.0, mean=(123.7, 116.3, 103.5), std=(58.4, 57.1, 57.4))}
    values.update(overrides)
    return aipp_from_preprocessing(**values)


def test_mean_splits_into_integer_mean_chn_and_fractional_min_chn_and_var_reci_is_scale_over_std() -> None:
    config = _generated()
    assert config.mean_chn[:3] == (123, 116, 103)
    assert config.min_chn[:3] == pytest.approx((0.7, 0.3, 0.5), abs=1e-9)
    assert config.var_reci_chn[:3] == pytest.approx((1 / 58.4, 1 / 57.1, 1 / 57.4), rel=1e-15)
    assert not config.rbuv_swap_switch and not config.crop and not config.csc_switch
    assert (config.src_image_size_w, config.src_image_size_h) == (224, 224)


def test_scale_moves_the_mean_into_pixel_units() -> None:
    """(p * s - m) / d = (p - m / s) * (s / d): ImageNet's 0..1 mean 0.485 is 123.675 pixels."""
    config = _generated(normalisation=Normalisation(scale=1 / 255, mean=(0.485, 0.456, 0.406),
                                                    std=(0.229, 0.224, 0.225)))
    offsets = [config.mean_chn[c] + config.min_chn[c] for c in range(3)]
    assert offsets == pytest.approx([0.485 * 255, 0.456 * 255, 0.406 * 255], rel=1e-12)
    assert config.mean_chn[:3] == (123, 116, 103)
    assert config.var_reci_chn[:3] == pytest.approx((1 / 255 / 0.229, 1 / 255 / 0.224, 1 / 255 / 0.225))


def test_bgr_turns_the_swap_on_and_a_larger_source_is_centre_cropped() -> None:
    config = _generated(color="BGR", src_size=(256, 240))
    assert config.rbuv_swap_switch
    assert config.crop and (config.crop_size_w, config.crop_size_h) == (224, 224)
    assert (config.load_start_pos_w, config.load_start_pos_h) == (16, 8)
    assert config.input_shape(4) == (4, 240, 256, 3)


def test_yuv420sp_gets_the_documented_matrix_in_the_model_colour_order() -> None:
    rgb = _generated(input_format="YUV420SP_U8", csc="bt601n", src_size=(226, 226), crop_start=(2, 2))
    assert rgb.csc_switch and rgb.matrix == ((298, 0, 409), (298, -100, -208), (298, 516, 0))
    assert rgb.input_bias == (16, 128, 128)
    bgr = _generated(input_format="YUV420SP_U8", csc="bt601n", color="BGR")
    # ATC's own YUV420SP_U8 -> BGR example: rows 298/516/0, 298/-100/-208, 298/0/409
    assert bgr.matrix == ((298, 516, 0), (298, -100, -208), (298, 0, 409))
    assert rgb.input_shape(2) == (2, 339, 226, 1)  # NV12: H rows of Y, H/2 rows of interleaved UV
    assert CSC_MATRICES["jpeg"][0] == ((256, 0, 359), (256, -88, -183), (256, 454, 0))
    assert CSC_MATRICES["bt709n"][0] == ((298, 0, 459), (298, -55, -136), (298, 541, 0))


@pytest.mark.parametrize(("overrides", "message"), [
    ({"normalisation": Normalisation(scale=1.0, mean=(-1.0,), std=(1.0,))},
     "channel 0: mean / scale = -1 cannot be expressed in AIPP"),
    ({"src_size": (200, 224)}, "--aipp-src-size 200,224: smaller than the model input 224x224"),
    ({"csc": "jpeg"}, "--aipp-csc jpeg: a colour-space conversion is for YUV420SP_U8 sources"),
    ({"input_format": "YUV400_U8"}, "input_format YUV400_U8 gives 1 channel(s), input input 0 takes 3"),
    ({"input_format": "YUV420SP_U8", "src_size": (230, 230), "crop_start": (3, 2)}, "load_start_pos_w odd"),
    ({"src_size": (230, 230), "crop_start": (10, 0)}, "the crop window ends at (234, 224)"),
    ({"normalisation": Normalisation(scale=0.0, mean=(0.0,), std=(1.0,))}, "--scale 0: AIPP's var_reci_chn"),
])
def test_what_aipp_cannot_express_is_refused_by_name(overrides: dict[str, object], message: str) -> None:
    with pytest.raises(ConvertError) as caught:
        _generated(**overrides)
    assert message in caught.value.message


def test_written_config_reads_back_equal() -> None:
    for config in (_generated(color="BGR", src_size=(240, 230)),
                   _generated(input_format="YUV420SP_U8", csc="bt709n"),
                   _generated(input_format="XRGB8888_U8")):
        text = config.to_prototxt(("a header",))
        assert text.startswith("# a header\naipp_op {\n    aipp_mode: static\n")
        assert parse_aipp_text(text, Path("aipp.cfg")) == config


def test_parses_atc_documentation_style_config_with_comments() -> None:
    text = """# YUV420SP_U8 to BGR
aipp_op {
    aipp_mode: static
    input_format : YUV420SP_U8
    csc_switch : true
    rbuv_swap_switch : false   # NV12
    related_input_rank: 0
    src_image_size_w: 256
    src_image_size_h: 256
    crop: false
    matrix_r0c0: 298
    matrix_r0c1: 516
    matrix_r0c2: 0
    matrix_r1c0: 298
    matrix_r1c1: -100
    matrix_r1c2: -208
    matrix_r2c0: 298
    matrix_r2c1: 0
    matrix_r2c2: 409
    input_bias_0: 16
    input_bias_1: 128
    input_bias_2: 128
    mean_chn_0: 104
    min_chn_0: 0.5
}
"""
    config = parse_aipp_text(text, Path("hand.cfg"))
    assert config.input_format == "YUV420SP_U8" and config.csc_switch
    assert config.matrix == ((298, 516, 0), (298, -100, -208), (298, 0, 409))
    assert config.input_bias == (16, 128, 128)
    assert config.mean_chn == (104, 0, 0, 0) and config.min_chn == (0.5, 0.0, 0.0, 0.0)
    assert config.var_reci_chn == (1.0, 1.0, 1.0, 1.0)  # ATC's default where a channel's value is not given


_STATIC = "aipp_op {\n aipp_mode: static\n input_format: RGB888_U8\n"


@pytest.mark.parametrize(("text", "message"), [
    ("aipp_op {\n aipp_mode: dynamic\n input_format: RGB888_U8\n}", "hand.cfg:2: aipp_mode dynamic: only static"),
    (_STATIC + " padding: true\n}", "hand.cfg:4: padding true: padding is not emulated by infer"),
    (_STATIC + " resize: true\n}", "hand.cfg:4: resize true: resizing is not emulated by infer"),
    (_STATIC + " rotation_angle: 1\n}", "hand.cfg:4: rotation_angle 1: rotation is not emulated by infer"),
    (_STATIC + " input_edge_idx: 0\n}", "hand.cfg:4: input_edge_idx 0: AIPP on some of the input's edges only"),
    (_STATIC + " single_line_mode: true\n}", "hand.cfg:4: single_line_mode true: single-line mode is not"),
    ("aipp_op {\n input_format: RGB888_U8\n scf_switch: true\n}",
     "hand.cfg:3: field 'scf_switch' is not a field of ATC's AIPP config"),
    ("aipp_op {\n input_format: RGB888_U8\n}", "hand.cfg: no aipp_mode; ATC refuses a config without one"),
    ("aipp_op {\n aipp_mode: static\n input_format: YUYV_U8\n}",
     "hand.cfg:3: input_format YUYV_U8 is not one infer's AIPP handles"),
    ("aipp_op {\n aipp_mode: static\n}", "hand.cfg: no input_format"),
    ("aipp_op { aipp_mode: static }\naipp_op { aipp_mode: static }", "hand.cfg: 2 aipp_op blocks"),
    ("aipp_op {\n aipp_mode: static\n mean_chn_0: abc\n}", "hand.cfg:3: not a valid AIPP config"),
    (_STATIC + " mean_chn_0: 123.675\n}",
     "hand.cfg:4: mean_chn_0 123.675: ATC takes a whole number there (a fractional mean goes into min_chn)"),
    (_STATIC + " mean_chn_1: 256\n}", "hand.cfg:4: mean_chn_1 256: outside ATC's documented range [0, 255]"),
    (_STATIC + " min_chn_0 : 255.5\n}", "hand.cfg:4: min_chn_0 255.5: outside ATC's documented range [0, 255]"),
    (_STATIC + " var_reci_chn_2: -70000\n}", "hand.cfg:4: var_reci_chn_2 -70000: outside ATC's documented range"),
    (_STATIC + " csc_switch: true\n matrix_r1c2: 40000\n}", "hand.cfg:5: matrix_r1c2 40000: outside"),
    (_STATIC + " csc_switch: true  # on\n output_bias_0: 256\n}", "hand.cfg:5: output_bias_0 256: outside"),
    (_STATIC + " src_image_size_w: 1\n}", "hand.cfg:4: src_image_size_w 1: outside ATC's documented range [2, 4096]"),
    (_STATIC + " crop: true\n load_start_pos_h: 4096\n}", "hand.cfg:5: load_start_pos_h 4096: outside"),
])
def test_hand_written_config_refusals_name_the_field(text: str, message: str) -> None:
    with pytest.raises(ConvertError) as caught:
        parse_aipp_text(text, Path("hand.cfg"))
    assert caught.value.message.startswith(message)


def test_documented_fields_switched_off_are_accepted() -> None:
    """ATC's template lists padding, resize, rotation and more; switched off they leave the image alone."""
    text = _STATIC + (" related_input_name: \"\"\n max_src_image_size: 0\n support_rotation: false\n"
                      " cpadding_value: 0.0\n resize: false\n resize_output_w: 0\n padding: false\n"
                      " left_padding_size: 0\n padding_value: 0\n rotation_angle: 0\n single_line_mode: false\n"
                      " raw_rgbir_to_f16_n: 8\n}")
    assert parse_aipp_text(text, Path("hand.cfg")) == AippConfig()


@pytest.mark.parametrize(("fmt", "matrix"), [
    ("YUV420SP_U8", ((298, 516, 0), (298, -100, -208), (298, 0, 409))),  # BT.601 narrow YUV -> BGR
    ("RGB888_U8", ((66, 129, 25), (-38, -74, 112), (112, -94, -18))),  # BT.601 narrow RGB -> YUV
])
def test_csc_fields_left_out_take_atc_defaults(fmt: str, matrix: tuple[tuple[int, ...], ...]) -> None:
    """GraphEngine fills each matrix entry and bias a config with csc_switch on leaves out; off, nothing is used."""
    on = parse_aipp_text(f"aipp_op {{ aipp_mode: static input_format: {fmt} csc_switch: true }}", Path("a.cfg"))
    assert on.matrix == matrix and on.input_bias == (16, 128, 128) and on.output_bias == (16, 128, 128)
    # the common hand-written mistake: JPEG's matrix without its biases gets 16, not 0
    jpeg = "".join(f" matrix_r{r}c{c}: {CSC_MATRICES['jpeg'][0][r][c]}" for r in range(3) for c in range(3))
    partial = parse_aipp_text(f"aipp_op {{ aipp_mode: static input_format: YUV420SP_U8 csc_switch: true {jpeg}"
                              " input_bias_1: 128 }", Path("a.cfg"))
    assert partial.matrix == CSC_MATRICES["jpeg"][0] and partial.input_bias == (16, 128, 128)
    off = parse_aipp_text(f"aipp_op {{ aipp_mode: static input_format: {fmt} }}", Path("a.cfg"))
    assert off.matrix == ((0, 0, 0),) * 3 and off.input_bias == (0, 0, 0)


def test_all_five_csc_tables_are_atcs_documented_ones() -> None:
    """ATC's CSC guide, YUV420SP_U8 -> RGB: BT.601 wide is printed with JPEG's numbers."""
    assert CSC_MATRICES == {
        "jpeg": (((256, 0, 359), (256, -88, -183), (256, 454, 0)), (0, 128, 128)),
        "bt601n": (((298, 0, 409), (298, -100, -208), (298, 516, 0)), (16, 128, 128)),
        "bt601w": (((256, 0, 359), (256, -88, -183), (256, 454, 0)), (0, 128, 128)),
        "bt709n": (((298, 0, 459), (298, -55, -136), (298, 541, 0)), (16, 128, 128)),
        "bt709w": (((256, 0, 403), (256, -48, -120), (256, 475, 0)), (0, 128, 128)),
    }


def test_crop_without_crop_size_takes_the_model_size_and_needs_a_source_size() -> None:
    """ATC's template: with crop on (and no padding) a crop_size of 0 or left out is the model input's size; a
    src_image_size of 0 means the model's size only with crop and padding off."""
    text = _STATIC + " src_image_size_w: 12\n src_image_size_h: 10\n crop: true\n load_start_pos_w: 2\n}"
    config = check_against_input(parse_aipp_text(text, Path("a.cfg")), "x", 8, 8, 3, "a.cfg")
    assert (config.crop_size_w, config.crop_size_h, config.load_start_pos_w) == (8, 8, 2)
    with pytest.raises(ConvertError) as caught:
        check_against_input(parse_aipp_text(_STATIC + " crop: true\n}", Path("a.cfg")), "x", 8, 8, 3, "a.cfg")
    assert caught.value.message.startswith("a.cfg: src_image_size_w/h 0 with crop: true")


def test_xrgb8888_is_generated_with_the_x_first_swap_as_atc_documents_it() -> None:
    config = _generated(input_format="XRGB8888_U8")
    assert config.ax_swap_switch and "ax_swap_switch: true" in config.to_prototxt()
