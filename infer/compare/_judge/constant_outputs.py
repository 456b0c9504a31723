"""Outputs that do not depend on the input: every sample's values the same.

A collapsed or badly calibrated model (a dead ReLU layer, a softmax saturated to one class, weights never
restored) answers the same for every input; a converted model that agrees with it passes every metric, and the
PASS proves little about the conversion. Each side is read on its own: TensorFlow's outputs constant say the
model is; the converted model's alone say the conversion lost the input. The same within float32's noise
(|x - first sample| <= 1e-6 + 1e-5 |first sample|, NaN equal to NaN); an output without a batch dimension is
judged file by file (one run each), and a dataset of one sample (or one file) says nothing either way. Where the
inputs are the same for every sample too (const: sources), the dataset is one sample repeated, and says so. The
outputs are watched as the measure reads them (pass one), not read again; the inputs only when an output is the
same throughout.

Like with like: a conversion that computes in fp16 resolves its outputs on fp16's grid, where float32's tolerance
(1e-6 absolute) is a whole fp16 step for values near 1e-3 (a 1000-class softmax). Its outputs are then judged
the same only when they are, rounded to fp16, exactly; and TensorFlow's are said to vary only where they do at
that resolution too: outputs that vary by less than fp16 can tell apart are not "the conversion lost the input".

Either is watched in the measure's own pass (`SameSamples`): one that computes in fp16 at fp16's resolution,
TensorFlow's side at both resolutions (it was read a second time for that; issue 42: work the user did not ask
for is done in the same pass as the measure).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from binio.binfile import read_bin
from binio.manifest import DatasetManifest
from infer.compare._sides.run_folders import OutputPair

_ATOL, _RTOL = 1e-6, 1e-5


@dataclass(frozen=True)
class ConstantOutput:
    """An output whose every sample is the same on one side or both."""

    name: str
    golden: bool  # TensorFlow's values are the same for every sample
    actual: bool  # the converted model's are
    inputs_same: bool = False  # so are the samples fed (const: sources): the dataset is one sample, repeated
    below_fp16: bool = False  # TensorFlow's vary, but by less than fp16 resolves: rounded to fp16 they are the same

    @property
    def lost_the_input(self) -> bool:
        """The converted model's answer is the same for every sample where TensorFlow's varies, at the converted
        model's own resolution."""
        return self.actual and not self.golden and not self.below_fp16 and not self.inputs_same

    def describe(self) -> str:
        if self.inputs_same:
            return (f"{self.name} is the same for every sample, as is every input: the dataset holds one sample "
                    "repeated (const: sources?); a PASS on it proves little")
        if self.below_fp16:
            return (f"{self.name} is the same for every sample in the converted model's outputs; TensorFlow's vary, "
                    "but by less than fp16 resolves (rounded to fp16 they are the same too): the output barely "
                    "depends on the input; a PASS on it proves little")
        if self.golden and self.actual:
            where = "in TensorFlow's outputs and the converted model's: it does not depend on the input"
        elif self.golden:
            where = "in TensorFlow's outputs: the model's answer does not depend on the input"
        else:
            where = "in the converted model's outputs (TensorFlow's vary): the conversion lost the input"
        return f"{self.name} is the same for every sample {where}; a PASS on it proves little"

    def to_json(self) -> dict[str, Any]:
        return {"output": self.name, "golden": self.golden, "actual": self.actual, "inputs_same": self.inputs_same,
                "below_fp16": self.below_fp16, "text": self.describe()}


class _Sameness:
    """Whether the units (samples, or whole files) seen so far are all the first one: within float32's noise, or
    (`fp16`) rounded to fp16, exactly."""

    def __init__(self, *, fp16: bool = False) -> None:
        self.first: np.ndarray | None = None
        self.units = 0
        self.same = True
        self.fp16 = fp16

    def _resolved(self, units: np.ndarray) -> np.ndarray:
        if self.fp16 and units.dtype.kind == "f":
            with np.errstate(over="ignore"):  # past 65504 is inf in fp16: the same inf is the same
                return units.astype(np.float16)
        return units

    def start_from(self, unit: np.ndarray) -> None:
        """The unit every later one is judged against (a shard's: the dataset's first), at this resolution."""
        self.first = np.array(self._resolved(unit[None])[0])

    def take(self, units: np.ndarray) -> None:
        """`units`: one or more units stacked on the first axis."""
        if not self.same or not len(units):
            return
        units = self._resolved(units)
        if self.first is None:
            self.first = np.array(units[0])
        if self.fp16 and self.first.dtype.kind == "f":
            equal = (units == self.first) | (np.isnan(units) & np.isnan(self.first))
        elif self.first.dtype.kind in "fc":
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


def _units(raw: np.ndarray, wide: np.ndarray | None, rows: int, batch_major: bool) -> np.ndarray:
    """A batch's units stacked on the first axis: its samples, or the whole file as one. `wide` is the batch as
    float64 when the caller has it already (pass one does), taken for a float output in place of a new copy."""
    values = wide if wide is not None and raw.dtype.kind == "f" else _float(np.asarray(raw))
    return values.reshape(rows, -1) if batch_major else values.reshape(1, -1)


class SameSamples:
    """Whether every unit of an output (each sample, or each file of an output without a batch dimension) is the
    dataset's first one, on each side: watched as pass one reads the batches (`infer.compare._judge.passes`), so
    the check reads nothing of its own. A shard that does not hold the dataset's first batch reads that batch's
    first unit to start from, so shards judge each unit against the same one as a single pass does."""

    def __init__(self, pair: OutputPair, stems: Collection[str], *, fp16: bool = False) -> None:
        """`fp16`: the converted model computes in fp16; its outputs are judged at fp16's resolution, TensorFlow's
        at both (the module's note)."""
        self.batch_major = pair.batch_major
        self.golden, self.actual = _Sameness(), _Sameness(fp16=fp16)
        self.golden_fp16 = _Sameness(fp16=True) if fp16 else None  # TensorFlow's, at the converted model's
        stems_in_order = pair.manifest.stems
        if stems_in_order and stems_in_order[0] not in stems:
            first = next(pair.batches({stems_in_order[0]}))
            if first.rows:
                golden = _units(first.golden, None, first.rows, self.batch_major)[0]
                self.golden.start_from(golden)
                self.actual.start_from(_units(first.actual, None, first.rows, self.batch_major)[0])
                if self.golden_fp16 is not None:
                    self.golden_fp16.start_from(golden)

    @property
    def watching(self) -> bool:
        """False once both sides vary: nothing more to learn."""
        return self.golden.same or self.actual.same

    def take(self, actual: np.ndarray, golden: np.ndarray, rows: int, *, wide_actual: np.ndarray | None = None,
             wide_golden: np.ndarray | None = None) -> None:
        """One batch's real rows, as read; `wide_*` the same as flat float64, where the caller made them."""
        if not self.watching or not rows:
            return
        golden_units = _units(golden, wide_golden, rows, self.batch_major)
        self.golden.take(golden_units)
        self.actual.take(_units(actual, wide_actual, rows, self.batch_major))
        if self.golden_fp16 is not None:
            self.golden_fp16.take(golden_units)

    @staticmethod
    def judge(name: str, parts: Sequence[SameSamples]) -> ConstantOutput | None:
        """The output's verdict from every shard's watch, in dataset order."""
        golden = all(p.golden.same for p in parts) and sum(p.golden.units for p in parts) > 1
        actual = all(p.actual.same for p in parts) and sum(p.actual.units for p in parts) > 1
        fp16 = [p.golden_fp16 for p in parts if p.golden_fp16 is not None]
        # TensorFlow's vary, but not at the fp16 converted model's resolution
        below = (actual and not golden and len(fp16) == len(parts) and all(s.same for s in fp16)
                 and sum(s.units for s in fp16) > 1)
        return ConstantOutput(name=name, golden=golden, actual=actual, below_fp16=below) if golden or actual else None


def constant_output(pair: OutputPair, *, fp16: bool = False) -> ConstantOutput | None:
    """The output `pair` names when its samples are all the same on a side; stops reading once both vary. `fp16`:
    the converted model computed in fp16, and its outputs are judged at fp16's resolution (the module's note)."""
    golden, actual = _Sameness(), _Sameness(fp16=fp16)
    golden_fp16 = _Sameness(fp16=True) if fp16 else None  # TensorFlow's, at the converted model's resolution
    for batch in pair.batches():
        if not (golden.same or actual.same):
            return None
        sides = [(golden, batch.golden), (actual, batch.actual)]
        if golden_fp16 is not None:
            sides.append((golden_fp16, batch.golden))
        for seen, values in sides:
            units = _float(np.asarray(values))
            seen.take(units if pair.batch_major else units[None])  # else one run a file
    if not (golden.constant or actual.constant):
        return None
    below = golden_fp16 is not None and actual.constant and not golden.constant and golden_fp16.constant
    return ConstantOutput(name=pair.name, golden=golden.constant, actual=actual.constant, below_fp16=below)


def inputs_all_same(manifest: DatasetManifest) -> bool:
    """Whether every input's samples are all the same (a scalar input: its files)."""
    for item in manifest.inputs:
        seen = _Sameness()
        for entry in item.files:
            values = _float(np.asarray(read_bin(manifest.file_path(item, entry), item.spec, mmap=True)))
            seen.take(values[: entry.rows] if item.shape else values[None])
            if not seen.same:
                return False
    return True


def with_inputs_same(found: tuple[ConstantOutput, ...], manifest: DatasetManifest) -> tuple[ConstantOutput, ...]:
    """The constant outputs, each saying whether the inputs are the same for every sample too (read only then)."""
    if found and inputs_all_same(manifest):
        return tuple(replace(constant, inputs_same=True) for constant in found)
    return found
