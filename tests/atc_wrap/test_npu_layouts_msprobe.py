"""The layout conversions agree with msaccucmp's own (`msprobe/msaccucmp/format_manager/builtin_format_convert` in
the mindstudio-probe wheel, 26.2.0) on the same device tensors. Skipped where msprobe cannot be imported: its
site-packages folder is found by import, or named in INFER_MSPROBE_SITE (a scratch venv's, say)."""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from atc_wrap.ascend_files.npu_layouts import to_origin_layout
from tests.atc_wrap.npu_layout_reference import hwcn_to_fractal_z, nchw_to_nc1hwc0, nd_to_fractal_nz


def _msaccucmp_folder() -> Path | None:
    named = os.environ.get("INFER_MSPROBE_SITE")
    if named:
        folder = Path(named) / "msprobe" / "msaccucmp"
        return folder if folder.is_dir() else None
    spec = importlib.util.find_spec("msprobe")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "msaccucmp"
    return folder if folder.is_dir() else None


FOLDER = _msaccucmp_folder()
pytestmark = pytest.mark.skipif(FOLDER is None, reason="msprobe (mindstudio-probe) is not importable")


@pytest.fixture(scope="module")
def msprobe_convert() -> Iterator[Callable[[str], Callable[..., np.ndarray]]]:
    """convert_X_to_Y's `convert(shape_from, shape_to, array)`, loaded from its file (its imports want the
    msaccucmp folder on sys.path)."""
    assert FOLDER is not None
    sys.path.insert(0, str(FOLDER))
    loaded: dict[str, ModuleType] = {}

    def load(name: str) -> Callable[..., np.ndarray]:
        if name not in loaded:
            path = FOLDER / "format_manager" / "builtin_format_convert" / f"convert_{name}.py"
            spec = importlib.util.spec_from_file_location(f"msprobe_convert_{name}", path)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            loaded[name] = module
        convert: Callable[..., np.ndarray] = loaded[name].convert
        return convert

    yield load
    sys.path.remove(str(FOLDER))


def _values(shape: tuple[int, ...]) -> np.ndarray:
    return (np.arange(np.prod(shape)) % 1000 + 1).astype(np.float32).reshape(shape)


@pytest.mark.parametrize("shape", [(2, 20, 3, 5), (1, 16, 1, 1), (3, 33, 2, 2)])
def test_nc1hwc0_agrees(msprobe_convert: Callable[[str], Callable[..., np.ndarray]],
                        shape: tuple[int, int, int, int]) -> None:
    nchw = _values(shape)
    device = nchw_to_nc1hwc0(nchw, 16)
    theirs = msprobe_convert("NC1HWC0_to_NCHW")(list(device.shape), list(shape), device.ravel())
    # msaccucmp keeps the padded channels; the origin shape drops them
    assert np.array_equal(to_origin_layout(device, "NC1HWC0", device.shape, "NCHW", shape), theirs[:, :shape[1]])
    nhwc_shape = (shape[0], shape[2], shape[3], shape[1])
    theirs_nhwc = msprobe_convert("NC1HWC0_to_NHWC")(list(device.shape), list(nhwc_shape), device.ravel())
    ours = to_origin_layout(device, "NC1HWC0", device.shape, "NHWC", nhwc_shape)
    assert np.array_equal(ours, theirs_nhwc[..., :shape[1]])


@pytest.mark.parametrize("shape", [(100, 20), (1, 21), (2, 3, 17, 40), (16, 16)])
def test_fractal_nz_agrees(msprobe_convert: Callable[[str], Callable[..., np.ndarray]],
                           shape: tuple[int, ...]) -> None:
    nd = _values(shape)
    device = nd_to_fractal_nz(nd)
    theirs = msprobe_convert("FRACTAL_NZ_to_ND")(list(device.shape), list(shape), device.ravel())
    ours = to_origin_layout(device, "FRACTAL_NZ", device.shape, "ND", shape)
    assert np.array_equal(ours, np.asarray(theirs).reshape(shape))


@pytest.mark.parametrize("shape", [(5, 5, 1, 16), (5, 5, 16, 32), (1, 3, 128, 64), (3, 3, 20, 17)])
def test_fractal_z_agrees_both_ways(msprobe_convert: Callable[[str], Callable[..., np.ndarray]],
                                    shape: tuple[int, int, int, int]) -> None:
    hwcn = _values(shape)
    device = hwcn_to_fractal_z(hwcn)
    theirs_forward = msprobe_convert("HWCN_to_FRACTAL_Z")(list(shape), list(device.shape), hwcn.ravel())
    assert np.array_equal(np.asarray(theirs_forward).reshape(device.shape), device)
    theirs = msprobe_convert("FRACTAL_Z_to_HWCN")(list(device.shape), list(shape), device.ravel())
    assert np.array_equal(to_origin_layout(device, "FRACTAL_Z", device.shape, "HWCN", shape), theirs)
    nchw_shape = (shape[3], shape[2], shape[0], shape[1])
    theirs_nchw = msprobe_convert("FRACTAL_Z_to_NCHW")(list(device.shape), list(nchw_shape), device.ravel())
    assert np.array_equal(to_origin_layout(device, "FRACTAL_Z", device.shape, "NCHW", nchw_shape), theirs_nchw)
