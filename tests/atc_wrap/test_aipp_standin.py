"""The stand-in's AIPP stage against AIPP computed in numpy from the documented formulas, for each input format."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from atc_wrap.aipp.config import CSC_MATRICES, AippConfig
from infer.contract import ModelContract
from tests.atc_wrap.outputs import onnx_outputs
from tests.builders.frozen import write_frozen

H, W = 6, 8  # the model input; sources are larger and cropped


def _identity_model(folder: Path, channels: int, layout: str = "NHWC") -> ModelContract:
    """out = x: the converted model's output is exactly what AIPP handed it."""
    shape = [2, H, W, channels] if layout == "NHWC" else [2, channels, H, W]

    def build(tf: Any) -> None:
        x = tf.compat.v1.placeholder(tf.float32, shape, name="x")
        tf.identity(x, name="out")

    contract = write_frozen(folder, build, ("x:0",), ("out:0",))
    if layout == "NCHW":
        from dataclasses import replace

        contract = replace(contract, inputs=(replace(contract.inputs[0], layout="NCHW"),)).save()
    return contract


def _convert(contract: ModelContract, config_text: str) -> ModelContract:
    from infer.convert._convert import ConvertOptions, convert_model
    from infer.model_aipp import AippOptions

    cfg = contract.folder / "hand.cfg"
    cfg.write_text(config_text)
    return convert_model(contract, ConvertOptions(target="onnx", precision_mode="force_fp32",
                                                  aipp=AippOptions(config=cfg))).contract


def _oracle(fmt: str, source: np.ndarray, *, swap: bool, crop: tuple[int, int], matrix: Any, bias: Any,
            mean: list[int], minimum: list[float], reci: list[float], csc: bool, out_bias: Any = (0, 0, 0),
            ax_swap: bool = False) -> np.ndarray:
    """AIPP from ATC's documentation, one pixel at a time: swap, crop, CSC (>> 8), (p - mean - min) * var_reci
    with min and var_reci as fp16, fp16."""
    n = source.shape[0]
    src_h = source.shape[1] * 2 // 3 if fmt == "YUV420SP_U8" else source.shape[1]
    channels = 1 if fmt == "YUV400_U8" else 3
    out = np.zeros((n, H, W, channels), dtype=np.float16)
    for b in range(n):
        for i in range(H):
            for j in range(W):
                y, x = i + crop[1], j + crop[0]
                if fmt == "YUV420SP_U8":  # NV12: Y plane, then U,V pairs per 2x2 block
                    row = src_h + y // 2
                    pixel = [int(source[b, y, x, 0]), int(source[b, row, x // 2 * 2, 0]),
                             int(source[b, row, x // 2 * 2 + 1, 0])]
                    if swap:
                        pixel = [pixel[0], pixel[2], pixel[1]]
                elif fmt == "XRGB8888_U8":
                    raw = [int(v) for v in source[b, y, x]]
                    pixel = raw[1:4] if ax_swap else raw[0:3]  # ATC's table: XRGB with the swap, RGBX without
                    if swap:
                        pixel = pixel[::-1]
                else:
                    pixel = [int(v) for v in source[b, y, x]]
                    if swap:
                        pixel = pixel[::-1]
                if csc:
                    if fmt == "YUV420SP_U8":
                        centred = [pixel[k] - bias[k] for k in range(3)]
                        pixel = [(sum(matrix[r][k] * centred[k] for k in range(3)) >> 8) for r in range(3)]
                    else:
                        pixel = [(sum(matrix[r][k] * pixel[k] for k in range(3)) >> 8) + out_bias[r]
                                 for r in range(3)]
                    pixel = [min(255, max(0, v)) for v in pixel]
                for c in range(channels):
                    # the AIPP kernel loads min_chn and var_reci_chn into its registers as fp16
                    value = (np.float32(pixel[c]) - np.float32(mean[c]) - np.float32(np.float16(minimum[c]))) \
                        * np.float32(np.float16(reci[c]))
                    out[b, i, j, c] = np.float16(value)
    return out


def _block(fmt: str, src: tuple[int, int], crop: tuple[int, int], extra: str) -> str:
    return (f"aipp_op {{\n aipp_mode: static\n input_format: {fmt}\n src_image_size_w: {src[0]}\n"
            f" src_image_size_h: {src[1]}\n crop: true\n load_start_pos_w: {crop[0]}\n load_start_pos_h: {crop[1]}\n"
            f" crop_size_w: {W}\n crop_size_h: {H}\n{extra}}}\n")


NORM = (" mean_chn_0: 104\n mean_chn_1: 117\n mean_chn_2: 123\n min_chn_0: 0.675\n min_chn_1: 0.28\n"
        " min_chn_2: 0.53\n var_reci_chn_0: 0.0171247538\n var_reci_chn_1: 0.0175070028\n"
        " var_reci_chn_2: 0.0174291939\n")
MEANS, MINS, RECIS = [104, 117, 123], [0.675, 0.28, 0.53], [0.0171247538, 0.0175070028, 0.0174291939]


@pytest.mark.slow
@pytest.mark.parametrize("swap", [False, True])
def test_rgb888_swap_crop_normalise(tmp_path: Path, swap: bool) -> None:
    contract = _convert(_identity_model(tmp_path, 3), _block("RGB888_U8", (11, 9), (3, 2),
                                                            f" rbuv_swap_switch: {str(swap).lower()}\n" + NORM))
    source = np.random.default_rng(0).integers(0, 256, size=(2, 9, 11, 3), dtype=np.uint8)
    assert contract.converted is not None
    assert [(s.dtype, s.shape, s.layout) for s in contract.converted.inputs] == [("uint8", (2, 9, 11, 3), "NHWC")]
    expected = _oracle("RGB888_U8", source, swap=swap, crop=(3, 2), matrix=None, bias=None, mean=MEANS,
                       minimum=MINS, reci=RECIS, csc=False)
    got = onnx_outputs(contract, {"x:0": source})[0]
    np.testing.assert_array_equal(got, expected.astype(np.float32))


def test_rgb888_with_csc_to_yuv_uses_the_output_bias(tmp_path: Path) -> None:
    matrix = ((77, 150, 29), (-43, -85, 128), (128, -107, -21))  # BT.601 RGB->YUV, times 256
    csc = "".join(f" matrix_r{r}c{c}: {matrix[r][c]}\n" for r in range(3) for c in range(3))
    text = _block("RGB888_U8", (10, 8), (2, 1), " csc_switch: true\n" + csc
                  + " output_bias_0: 0\n output_bias_1: 128\n output_bias_2: 128\n" + NORM)
    contract = _convert(_identity_model(tmp_path, 3), text)
    source = np.random.default_rng(1).integers(0, 256, size=(2, 8, 10, 3), dtype=np.uint8)
    expected = _oracle("RGB888_U8", source, swap=False, crop=(2, 1), matrix=matrix, bias=None, mean=MEANS,
                       minimum=MINS, reci=RECIS, csc=True, out_bias=(0, 128, 128))
    np.testing.assert_array_equal(onnx_outputs(contract, {"x:0": source})[0], expected.astype(np.float32))


@pytest.mark.parametrize("ax_swap", [False, True])
def test_xrgb8888_drops_x_and_swaps(tmp_path: Path, ax_swap: bool) -> None:
    text = _block("XRGB8888_U8", (9, 7), (1, 1), f" ax_swap_switch: {str(ax_swap).lower()}\n"
                  " rbuv_swap_switch: true\n" + NORM)
    contract = _convert(_identity_model(tmp_path, 3), text)
    source = np.random.default_rng(2).integers(0, 256, size=(2, 7, 9, 4), dtype=np.uint8)
    expected = _oracle("XRGB8888_U8", source, swap=True, crop=(1, 1), matrix=None, bias=None, mean=MEANS,
                       minimum=MINS, reci=RECIS, csc=False, ax_swap=ax_swap)
    np.testing.assert_array_equal(onnx_outputs(contract, {"x:0": source})[0], expected.astype(np.float32))


def test_yuv400_single_channel(tmp_path: Path) -> None:
    text = _block("YUV400_U8", (8, 8), (0, 2), " mean_chn_0: 127\n min_chn_0: 0.5\n var_reci_chn_0: 0.0078125\n")
    contract = _convert(_identity_model(tmp_path, 1), text)
    source = np.random.default_rng(3).integers(0, 256, size=(2, 8, 8, 1), dtype=np.uint8)
    expected = _oracle("YUV400_U8", source, swap=False, crop=(0, 2), matrix=None, bias=None, mean=[127],
                       minimum=[0.5], reci=[0.0078125], csc=False)
    np.testing.assert_array_equal(onnx_outputs(contract, {"x:0": source})[0], expected.astype(np.float32))


@pytest.mark.slow
@pytest.mark.parametrize(("standard", "swap"), [("jpeg", False), ("bt601n", True), ("bt709n", False),
                                                 ("bt709w", False)])
def test_yuv420sp_upsampled_converted_normalised(tmp_path: Path, standard: str, swap: bool) -> None:
    matrix, bias = CSC_MATRICES[standard]
    csc = "".join(f" matrix_r{r}c{c}: {matrix[r][c]}\n" for r in range(3) for c in range(3))
    csc += "".join(f" input_bias_{i}: {bias[i]}\n" for i in range(3))
    text = _block("YUV420SP_U8", (12, 10), (2, 4), f" csc_switch: true\n rbuv_swap_switch: {str(swap).lower()}\n"
                  + csc + NORM)
    contract = _convert(_identity_model(tmp_path, 3), text)
    assert contract.converted is not None
    assert contract.converted.inputs[0].shape == (2, 15, 12, 1)  # Y plane over the UV plane (NV12)
    source = np.random.default_rng(4).integers(0, 256, size=(2, 15, 12, 1), dtype=np.uint8)
    expected = _oracle("YUV420SP_U8", source, swap=swap, crop=(2, 4), matrix=matrix, bias=bias, mean=MEANS,
                       minimum=MINS, reci=RECIS, csc=True)
    np.testing.assert_array_equal(onnx_outputs(contract, {"x:0": source})[0], expected.astype(np.float32))


def test_nchw_model_input_gets_aipp_output_transposed(tmp_path: Path) -> None:
    contract = _convert(_identity_model(tmp_path, 3, "NCHW"), _block("RGB888_U8", (8, 6), (0, 0), NORM))
    source = np.random.default_rng(5).integers(0, 256, size=(2, 6, 8, 3), dtype=np.uint8)
    expected = _oracle("RGB888_U8", source, swap=False, crop=(0, 0), matrix=None, bias=None, mean=MEANS,
                       minimum=MINS, reci=RECIS, csc=False)
    np.testing.assert_array_equal(onnx_outputs(contract, {"x:0": source})[0],
                                  expected.astype(np.float32).transpose(0, 3, 1, 2))


def test_numpy_apply_matches_the_stand_in(tmp_path: Path) -> None:
    """`atc_wrap.aipp.apply`, which compare uses, computes what the stand-in's stage computes."""
    from atc_wrap.aipp.apply import apply_aipp

    matrix, bias = CSC_MATRICES["bt601n"]
    csc = "".join(f" matrix_r{r}c{c}: {matrix[r][c]}\n" for r in range(3) for c in range(3))
    csc += "".join(f" input_bias_{i}: {bias[i]}\n" for i in range(3))
    text = _block("YUV420SP_U8", (10, 8), (2, 2), " csc_switch: true\n" + csc + NORM)
    contract = _convert(_identity_model(tmp_path, 3), text)
    assert contract.converted is not None
    config: AippConfig = AippConfig.from_json(contract.converted.settings["aipp"]["config"])
    source = np.random.default_rng(6).integers(0, 256, size=(2, 12, 10, 1), dtype=np.uint8)
    np.testing.assert_array_equal(apply_aipp(config, source).astype(np.float32),
                                  onnx_outputs(contract, {"x:0": source})[0])


def test_min_and_var_reci_are_used_as_fp16_as_the_aipp_kernel_loads_them() -> None:
    """min_chn 200.3 is 200.25 in fp16 (spacing 0.125 there): 255 - 200.25 = 54.75, where float32 would give
    54.7 (stored as 54.6875)."""
    from atc_wrap.aipp.apply import apply_aipp

    config = AippConfig(src_image_size_w=1, src_image_size_h=1, min_chn=(200.3, 0.0, 0.0, 0.0),
                        var_reci_chn=(1.0, 0.1, 1.0, 1.0))
    out = apply_aipp(config, np.full((1, 1, 1, 3), 255, dtype=np.uint8))
    assert float(out[0, 0, 0, 0]) == 54.75
    assert float(out[0, 0, 0, 1]) == float(np.float16(np.float32(255) * np.float32(np.float16(0.1))))
