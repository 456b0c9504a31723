"""AIPP's output against the declared preprocessing, on the dataset's own uint8 bins, and which setting differs.

Compare already measures the whole path (AIPP plus the model) against TensorFlow fed the declared preprocessing;
this check says where a difference comes from. AIPP is computed in numpy (`atc_wrap.aipp.apply`) for every
batch of the AIPP input and compared per channel, in the model input's units, with ``(pixel * scale - mean) / std``
in float64. AIPP stores its output as fp16, so up to fp16's rounding (a relative 2**-11, plus float32 arithmetic)
is expected, plus what holding min_chn and var_reci_chn as fp16 moves (bounded per channel from the config's own
values), and with a CSC (YUV420SP bins) up to one pixel unit more, which its integer ``>> 8`` floors away
where the declared decoding is exact; past that the check fails and names the config settings that do not give
the declared preprocessing: the channel swap, the crop position, the CSC matrix's row order, each channel's mean
and var_reci.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from atc_wrap.aipp.apply import apply_aipp
from atc_wrap.aipp.config import CSC_MATRICES, AippConfig, csc_rows, held_fp16
from binio.binfile import read_bin
from binio.errors import InferError
from binio.manifest import DatasetManifest
from infer.contract import ModelContract
from infer.model_aipp.config import model_aipp
from infer.model_aipp.declared import DeclaredPreprocessing

_RELATIVE = 2.0 ** -10  # fp16's half-ulp is 2**-11 of the value; twice that leaves room for float32 arithmetic
_SETTING_TOLERANCE = 1e-6  # relative, for a setting to count as the one the declared preprocessing needs


@dataclass(frozen=True)
class AippCheck:
    """AIPP's output against the declared preprocessing, for one input over the dataset."""

    input: str
    max_abs_diff: tuple[float, ...]  # per channel, in the model input's units
    tolerance: float
    mismatches: tuple[str, ...]  # config settings that do not give the declared preprocessing

    @property
    def passed(self) -> bool:
        return all(d <= self.tolerance for d in self.max_abs_diff)

    def describe(self) -> str:
        diffs = ", ".join(f"{d:.4g}" for d in self.max_abs_diff)
        text = (f"preprocessing: AIPP output of {self.input} differs from the declared preprocessing by up to "
                f"[{diffs}] per channel (limit {self.tolerance:.3g})")
        cause = "; ".join(self.mismatches) if self.mismatches else "no single AIPP setting explains it"
        return f"{text}: {cause}"

    def summary(self) -> str:
        """One line for the terminal, passed or not."""
        if not self.passed:
            return self.describe()
        diffs = ", ".join(f"{d:.3g}" for d in self.max_abs_diff)
        return (f"preprocessing: AIPP output of {self.input} matches the declared preprocessing (max |diff| per "
                f"channel [{diffs}], fp16's rounding allows {self.tolerance:.3g})")

    def to_json(self) -> dict[str, Any]:
        return {"input": self.input, "passed": self.passed, "max_abs_diff_per_channel": list(self.max_abs_diff),
                "tolerance": self.tolerance, "mismatches": list(self.mismatches)}


def _close(got: float, want: float) -> bool:
    return math.isclose(got, want, rel_tol=_SETTING_TOLERANCE, abs_tol=1e-9)


def mismatched_settings(config: AippConfig, declared: DeclaredPreprocessing) -> tuple[str, ...]:
    """The settings of `config` that do not give `declared`, each as ``setting value, the declared ... needs X``."""
    found: list[str] = []
    if config.input_format in ("RGB888_U8", "XRGB8888_U8"):
        wanted = declared.color == "BGR"
        if config.rbuv_swap_switch != wanted:
            found.append(f"rbuv_swap_switch {str(config.rbuv_swap_switch).lower()} (channel swap), the declared "
                         f"--color {declared.color} needs {str(wanted).lower()}")
    if config.is_yuv and declared.source_channels in ("NV12", "NV21"):
        swapped = declared.source_channels == "NV21"
        if config.rbuv_swap_switch != swapped:
            found.append(f"rbuv_swap_switch {str(config.rbuv_swap_switch).lower()} (U/V swap), the bins are "
                         f"{declared.source_channels}")
    if config.csc_switch and config.is_yuv:
        standards = [name for name in CSC_MATRICES if csc_rows(name, declared.color)[0] == config.matrix]
        if not standards:
            other = "BGR" if declared.color == "RGB" else "RGB"
            if any(csc_rows(name, other)[0] == config.matrix for name in CSC_MATRICES):
                found.append(f"CSC matrix rows give {other}, the declared --color {declared.color} needs "
                             f"{declared.color}")
    src_w, src_h = config.src_size
    start = declared.crop_start(src_h, src_w)
    at = (config.load_start_pos_w, config.load_start_pos_h) if config.crop else (0, 0)
    if at != start:
        found.append(f"crop at load_start_pos ({at[0]}, {at[1]}), the declared centre crop starts at "
                     f"({start[0]}, {start[1]})")
    for c in range(config.output_channels):
        mean = declared.mean[c] if len(declared.mean) > 1 else declared.mean[0]
        std = declared.std[c] if len(declared.std) > 1 else declared.std[0]
        offset = config.mean_chn[c] + config.min_chn[c]
        if not _close(offset, mean / declared.scale):
            found.append(f"mean_chn_{c} + min_chn_{c} = {offset:g}, the declared mean / scale = "
                         f"{mean / declared.scale:g}")
        if not _close(config.var_reci_chn[c], declared.scale / std):
            found.append(f"var_reci_chn_{c} = {config.var_reci_chn[c]:g}, the declared scale / std = "
                         f"{declared.scale / std:g}")
    return tuple(found)


def _held_parameters_bound(config: AippConfig) -> float:
    """The most that min_chn and var_reci_chn rounded to fp16 (as AIPP holds them) move an output value."""
    channels = config.output_channels
    worst = 0.0
    for c, (minimum, reci, held_min, held_reci) in enumerate(zip(
            config.min_chn[:channels], config.var_reci_chn[:channels], held_fp16(config.min_chn[:channels]),
            held_fp16(config.var_reci_chn[:channels]), strict=True)):
        reach = 255.0 + config.mean_chn[c] + abs(minimum)  # the largest |pixel - mean - min| a uint8 pixel gives
        worst = max(worst, abs(held_reci - reci) * reach + abs(held_min - minimum) * abs(held_reci))
    return worst


def check_aipp(contract: ModelContract, manifest: DatasetManifest) -> tuple[AippCheck, ...]:
    """The check for the model's AIPP input; () for a model without AIPP or a dataset declaring nothing."""
    config = model_aipp(contract)
    if config is None:
        return ()
    name = contract.inputs[config.related_input_rank].name
    item = manifest.find(name)
    record = None if item is None else item.preprocessing.get("declared")
    if item is None or not isinstance(record, dict):
        return ()
    declared = DeclaredPreprocessing.from_json(record)
    if declared.channels != config.output_channels:
        raise InferError(f"{manifest.path}: the declared preprocessing of {name} gives {declared.channels} "
                         f"channel(s), its AIPP config {config.output_channels}")
    worst = np.zeros(config.output_channels)
    magnitude = 0.0
    for entry in item.files:
        batch = read_bin(manifest.file_path(item, entry), item.spec)[: entry.rows]
        want = declared.apply_nhwc(batch)
        got = apply_aipp(config, batch).astype(np.float64)
        if got.shape != want.shape:
            raise InferError(f"{manifest.path}: AIPP gives {got.shape[1:]} per sample for {name}, the declared "
                             f"preprocessing {want.shape[1:]}")
        with np.errstate(invalid="ignore"):
            diff = np.abs(got - want).reshape(-1, config.output_channels)
        worst = np.maximum(worst, np.nan_to_num(diff, nan=np.inf).max(axis=0))
        magnitude = max(magnitude, float(np.abs(want).max()))
    tolerance = _RELATIVE * max(1.0, magnitude) + _held_parameters_bound(config)
    if config.csc_switch:  # AIPP's integer CSC (>> 8) floors what the declared decoding keeps: under a pixel unit
        tolerance += max(abs(v) for v in config.var_reci_chn[:config.output_channels])
    return (AippCheck(input=name, max_abs_diff=tuple(float(d) for d in worst), tolerance=tolerance,
                      mismatches=mismatched_settings(config, declared)),)
