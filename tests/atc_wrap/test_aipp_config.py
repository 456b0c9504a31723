"""AIPP configs: the training preprocessing mapped onto AIPP's fields, written, read back, and refused by name."""

from __future__ import annotations

from pathlib import Path

import pytest

from atc_wrap.aipp import CSC_MATRICES, AippConfig, Normalisation, aipp_from_preprocessing
from atc_wrap.aipp_parse import parse_aipp_text
from atc_wrap.errors import ConvertError


def _generated(**overrides: object) -> AippConfig:
    values: dict[str, object] = {
        "input_format": "RGB888_U8", "height": 224, "width": 224, "channels": 3, "color": "RGB",
        "normalisation": Normalisation(scale=1.0, mean=(123.7, 116.3, 103.5), std=(58.4, 57.1, 57.4))}
    values.update(overrides)
    return aipp_from_preprocessing(**values)  # type: ignore[arg-type]


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


@pytest.mark.parametrize(("text", "message"), [
    ("aipp_op {\n aipp_mode: dynamic\n input_format: RGB888_U8\n}", "hand.cfg: aipp_mode dynamic: only static"),
    ("aipp_op {\n input_format: RGB888_U8\n padding: true\n}", "hand.cfg:3: field 'padding' is not one"),
    ("aipp_op {\n input_format: RGB888_U8\n scf_switch: true\n}", "hand.cfg:3: field 'scf_switch' is not one"),
    ("aipp_op {\n input_format: RGB888_U8\n}", "hand.cfg: no aipp_mode (expected aipp_mode: static)"),
    ("aipp_op {\n input_format: YUYV_U8\n}", "hand.cfg:2: input_format YUYV_U8 is not one infer's AIPP handles"),
    ("aipp_op {\n aipp_mode: static\n}", "hand.cfg: no input_format"),
    ("aipp_op { aipp_mode: static }\naipp_op { aipp_mode: static }", "2 aipp_op blocks"),
    ("aipp_op {\n aipp_mode: static\n mean_chn_0: abc\n}", "hand.cfg:3: not a valid AIPP config"),
])
def test_hand_written_config_refusals_name_the_field(text: str, message: str) -> None:
    with pytest.raises(ConvertError) as caught:
        parse_aipp_text(text, Path("hand.cfg"))
    assert message in caught.value.message
