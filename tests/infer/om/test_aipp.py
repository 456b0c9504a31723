"""An om's AIPP (its Data op's `aipp` NamedAttrs, one attribute per aipp.cfg field, as GE's ConvertParamToAttr
stores them) as the AippConfig infer's AIPP path takes, where it is a static AIPP of a kind that path follows."""

from __future__ import annotations

from pathlib import Path

from atc_wrap.aipp.from_om import aipp_from_om
from atc_wrap.ascend_files.om_model import read_om
from binio.spec import TensorSpec
from infer.model_om import match_om
from tests.infer.om_files import OmPlan, write_om

IMAGES = TensorSpec("images:0", "float32", (1, 4, 4, 3), "NHWC")
PROBS = TensorSpec("probs:0", "float32", (1, 5))


def _params(tmp_path: Path, aipp: dict[str, object]) -> dict[str, object]:
    path = write_om(tmp_path / "model.om", OmPlan([IMAGES], [PROBS], input_dtypes={"images:0": "uint8"},
                                                  aipp={"images:0": aipp}))
    return dict(match_om(read_om(path), (IMAGES,), (PROBS,)).aipp)["images:0"]


def test_a_static_rgb_aipp_maps_field_by_field(tmp_path: Path) -> None:
    params = _params(tmp_path, {"aipp_mode": 1, "input_format": 3, "related_input_rank": 0, "src_image_size_w": 4,
                                "src_image_size_h": 4, "crop": False, "rbuv_swap_switch": True, "csc_switch": False,
                                "mean_chn_0": 123, "mean_chn_1": 117, "mean_chn_2": 104, "min_chn_0": 0.5,
                                "var_reci_chn_0": [0.25], "var_reci_chn_1": [0.5], "var_reci_chn_2": [1.0]})
    config, why_not = aipp_from_om(params)
    assert why_not == "" and config is not None
    assert (config.input_format, config.src_size, config.rbuv_swap_switch) == ("RGB888_U8", (4, 4), True)
    assert config.mean_chn == (123, 117, 104, 0)
    assert config.min_chn == (0.5, 0.0, 0.0, 0.0)
    assert config.var_reci_chn == (0.25, 0.5, 1.0, 1.0)


def test_a_dynamic_or_resizing_aipp_is_not_followed(tmp_path: Path) -> None:
    assert aipp_from_om(_params(tmp_path, {"aipp_mode": 2})) == (None, "aipp_mode 2 (only static AIPP, mode 1, is "
                                                                       "followed)")
    config, why_not = aipp_from_om(_params(tmp_path / "resize", {"aipp_mode": 1, "input_format": 3, "resize": True}))
    assert config is None and why_not == "resize switched on (not emulated here)"
    config, why_not = aipp_from_om(_params(tmp_path / "yuv422", {"aipp_mode": 1, "input_format": 9}))
    assert config is None and why_not.startswith("input_format 9 (followed: ")
