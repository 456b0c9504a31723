"""Outputs that do not depend on the input: every sample's values the same.

A collapsed or badly calibrated model (a dead ReLU layer, a softmax saturated to one class, weights never
restored) answers the same for every input; a converted model that agrees with it passes every metric, and the
PASS proves little about the conversion. Each side is read on its own: TensorFlow's outputs constant say the
model is; the converted model's alone say the conversion lost the input. The same within float32's noise
(|x - first sample| <= 1e-6 + 1e-5 |first sample|, NaN equal to NaN); an output without a batch dimension is
judged file by file (one run each), and a dataset of one sample (or one file) says nothing either way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from infer.compare._sources import OutputPair

_ATOL, _RTOL = 1e-6, 1e-5


@dataclass(frozen=True)
class ConstantOutput:
    """An output whose every sample is the same on one side or both."""

    name: str
    golden: bool  # TensorFlow's values are the same for every sample
    actual: bool  # the converted model's are

    def describe(self) -> str:
        if self.golden and self.actual:
            where = "in TensorFlow's outputs and the converted model's: it does not depend on the input"
        elif self.golden:
            where = "in TensorFlow's outputs: the model's answer does not depend on the input"
        else:
            where = "in the converted model's outputs (TensorFlow's vary): the conversion lost the input"
        return f"{self.name} is the same for every sample {where}; a PASS on it proves little"

    def to_json(self) -> dict[str, Any]:
        return {"output": self.name, "golden": self.golden, "actual": self.actual, "text": self.describe()}


class _Sameness:
    """Whether the units (samples, or whole files) seen so far are all the first one."""

    def __init__(self) -> None:
        self.first: np.ndarray | None = None
        self.units = 0
        self.same = True

    def take(self, units: np.ndarray) -> None:
        """`units`: one or more units stacked on the first axis."""
        if not self.same or not len(units):
            return
        if self.first is None:
            self.first = np.array(units[0])
        if self.first.dtype.kind in "fc":
            equal = np.isclose(units, self.first, rtol=_RTOL, atol=_ATOL, equal_nan=True)
        else:
            equal = units == self.first
        self.same = bool(np.all(equal))
        self.units += len(units)

    @property
    def constant(self) -> bool:
        return self.same and self.units > 1


def _float(values: np.ndarray) -> np.ndarray:
    return values.astype(np.float64) if values.dtype.kind == "f" else values


def constant_output(pair: OutputPair) -> ConstantOutput | None:
    """The output `pair` names when its samples are all the same on a side; stops reading once both vary."""
    golden, actual = _Sameness(), _Sameness()
    for batch in pair.batches():
        if not (golden.same or actual.same):
            return None
        if pair.batch_major:
            golden.take(_float(np.asarray(batch.golden)))
            actual.take(_float(np.asarray(batch.actual)))
        else:  # one run a file
            golden.take(_float(np.asarray(batch.golden))[None])
            actual.take(_float(np.asarray(batch.actual))[None])
    if not (golden.constant or actual.constant):
        return None
    return ConstantOutput(name=pair.name, golden=golden.constant, actual=actual.constant)


def constant_outputs(pairs: tuple[OutputPair, ...]) -> tuple[ConstantOutput, ...]:
    return tuple(found for pair in pairs if (found := constant_output(pair)) is not None)
