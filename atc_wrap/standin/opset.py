"""Which ONNX opsets the stand-in may use: those both tf2onnx can write and the installed ONNX Runtime can run."""

from __future__ import annotations

import logging

from atc_wrap.errors import ConvertError

log = logging.getLogger(__name__)
MIN_OPSET = 9  # below this tf2onnx 1.17 cannot express common ops (Upsample, dynamic Slice) on its own


def tf2onnx_max_opset() -> int:
    from tf2onnx import constants

    return max(constants.OPSET_TO_IR_VERSION)


def onnxruntime_max_opset() -> int:
    """The newest default-domain opset any of ONNX Runtime's kernels is registered for."""
    import onnx

    try:
        from onnxruntime.capi import _pybind_state

        kernels = _pybind_state.get_all_opkernel_def()
        return max(int(k.version_range[0]) for k in kernels if k.domain in ("", "ai.onnx"))
    except (ImportError, AttributeError, ValueError):  # a build without the kernel registry API
        log.debug("onnxruntime exposes no kernel registry; assuming it runs the installed onnx's opset")
        return int(onnx.defs.onnx_opset_version())


def default_opset() -> int:
    return min(tf2onnx_max_opset(), onnxruntime_max_opset())


def check_opset(opset: int | None) -> int:
    """The opset to use: the one asked for, checked, or the default."""
    highest = default_opset()
    if opset is None:
        return highest
    if not MIN_OPSET <= opset <= highest:
        raise ConvertError(f"--opset {opset}: expected {MIN_OPSET}..{highest} (the highest both tf2onnx and the "
                           f"installed onnxruntime handle)")
    return opset
