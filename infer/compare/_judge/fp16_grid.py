"""Whether an output's values lie on the float16 grid: every value equal to its float16 rounding.

An om converted with ATC's default force_fp16 computes in fp16 and casts to fp32 at its end when the output is
float32 (the AutoEncoder om of Ascend/ModelZoo-TensorFlow: a float32 output, every value an fp16 one). A float32
output wholly on the grid says the values went through fp16; it is a fact about the numbers, read from the actual
side alone, and the verdict line says it. A float32 computation leaves almost no output on it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from binio.binfile import read_bin
from binio.manifest import DatasetManifest
from binio.spec import TensorSpec
from infer.compare._sides.run_folders import batch_spec
from infer.run.layout import output_file_name

_WIDER_THAN_FP16 = ("float32", "float64")


def on_fp16_grid(values: np.ndarray) -> bool:
    """Every value equal to its float16 rounding (NaN to NaN; a value past fp16's range is not on it)."""
    with np.errstate(over="ignore"):  # past 65504 rounds to inf: off the grid, as intended
        rounded = values.astype(np.float16).astype(values.dtype)
    return bool(np.array_equal(values, rounded, equal_nan=True))


def outputs_on_fp16_grid(folder: Path, specs: tuple[TensorSpec, ...], manifest: DatasetManifest) -> tuple[str, ...]:
    """The float32 (or float64) outputs in `folder` (infer's layout) whose every value, over every batch's real
    rows, lies on the float16 grid. Stops reading an output at its first batch off the grid."""
    found = []
    rows = [entry.rows for entry in manifest.inputs[0].files] if manifest.inputs else []
    for index, written in enumerate(specs):
        if written.dtype not in _WIDER_THAN_FP16:
            continue
        spec = batch_spec(written, manifest.batch)
        batch_major = bool(spec.shape) and spec.shape[0] == manifest.batch
        on_grid = True
        for stem, real in zip(manifest.stems, rows, strict=True):
            values = read_bin(folder / output_file_name(stem, index), spec, mmap=True)
            if not on_fp16_grid(np.asarray(values[:real] if batch_major else values)):
                on_grid = False
                break
        if on_grid and rows:
            found.append(written.name)
    return tuple(found)
