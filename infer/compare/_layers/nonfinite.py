"""Naming an fp16 failure for what it is: where inf or NaN first appears layer by layer, and why.

Three causes make a converted fp16 model give inf or NaN where TensorFlow's fp32 values are finite:
- overflow: a finite value past 65504 (fp16's largest) becomes inf;
- underflow: a tiny positive value below fp16's smallest subnormal (about 6e-8) becomes 0, and an op that divides
  by it or takes its log, reciprocal square root or a negative power makes inf of it (``log(x*x + 1e-10)``: the
  eps itself is 0 in fp16);
- NaN from inf - inf or 0 * inf: an inf made upstream, in a tensor not compared on its own, meets another.
The first compared tensor holding inf/NaN where TF's is finite is classified from TF's values: of the tensor
itself, of its op's inputs, and of the tensors upstream that were not compared (fused by the converter).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from binio.dtypes import FP16_MAX

FP16_SMALLEST = float(np.finfo(np.float16).smallest_subnormal)

OVERFLOW, UNDERFLOW, NAN_FROM_INF, UNCLASSIFIED = "overflow", "underflow", "NaN from inf", "unclassified"
# TF ops that turn a 0 input into inf (or 0/0 into NaN).
UNDERFLOW_OPS = frozenset({"Log", "RealDiv", "Div", "Reciprocal", "Inv", "Rsqrt", "Pow", "Xdivy", "Xlogy",
                           "FloorDiv", "TruncateDiv", "DivNoNan"})
# What helps, per cause (the troubleshooting table says the same).
REMEDY = {
    OVERFLOW: "keep that op in fp32 (allow_mix_precision or force_fp32), or scale its input down",
    UNDERFLOW: "keep the op that makes the tiny input in fp32 as well as this one (force_fp32, or on ATC --keep_dtype "
               "for both; allow_mix_precision keeps Log and Exp in fp32 but not the Add or Mul before them, so the "
               "tiny value is still stored as 0), or use an eps fp16 can hold (>= 6e-8)",
    NAN_FROM_INF: "find the inf upstream (a fused op overflowed) and keep it in fp32",
    UNCLASSIFIED: "",
}


@dataclass(frozen=True)
class NonfiniteFinding:
    """The first compared tensor with inf/NaN where TensorFlow is finite, and the cause found for it."""

    tensor: str  # the first compared tensor holding inf/NaN
    op_type: str
    cause: str  # overflow | underflow | NaN from inf | unclassified
    at_tensor: str  # where the cause lies: the tensor itself or one upstream that was not compared
    at_op: str
    count: int  # elements of `tensor` that are inf/NaN where TF's are finite
    detail: str

    def describe(self) -> str:
        where = "" if self.at_tensor == self.tensor else f" in {self.at_tensor} ({self.at_op}, not compared)"
        remedy = REMEDY.get(self.cause, "")
        return (f"{self.tensor} ({self.op_type}): {self.count} inf/NaN where TensorFlow is finite; {self.cause}"
                f"{where}: {self.detail}" + (f"; what helps: {remedy}" if remedy else ""))

    def to_json(self) -> dict[str, Any]:
        return {"tensor": self.tensor, "op_type": self.op_type, "cause": self.cause, "at_tensor": self.at_tensor,
                "at_op": self.at_op, "count": self.count, "detail": self.detail}


@dataclass(frozen=True)
class TensorInfo:
    """What the classification needs of a TF tensor: its op and data inputs."""

    op_type: str
    inputs: tuple[str, ...]


def nonfinite_positions(actual: np.ndarray, golden: np.ndarray) -> np.ndarray:
    """Where the converted model has inf/NaN and TensorFlow a finite value."""
    return ~np.isfinite(actual) & np.isfinite(golden)


def _at(values: np.ndarray, shape: tuple[int, ...], where: np.ndarray) -> np.ndarray | None:
    """`values` at the positions `where` of a tensor of `shape`, when `values` broadcasts to it."""
    try:
        return np.broadcast_to(values, shape)[where]
    except ValueError:
        return None


def _underflows(values: np.ndarray) -> int:
    """How many nonzero values become 0 in fp16."""
    with np.errstate(all="ignore"):
        return int(np.count_nonzero((values != 0) & np.isfinite(values) & (values.astype(np.float16) == 0)))


def classify(tensor: str, actual: np.ndarray, golden: Mapping[str, np.ndarray], info: Mapping[str, TensorInfo],
             compared: Callable[[str], bool]) -> NonfiniteFinding:
    """Why `tensor` (compared, `actual` in TF's layout) holds inf/NaN where TF is finite. `compared(name)`: whether a
    tensor was compared on its own (an inf there would have been seen first)."""
    truth = golden[tensor]
    where = nonfinite_positions(actual, truth)
    count = int(np.count_nonzero(where))
    own = info[tensor]

    def found(cause: str, at: str, detail: str) -> NonfiniteFinding:
        return NonfiniteFinding(tensor=tensor, op_type=own.op_type, cause=cause, at_tensor=at,
                                at_op=info[at].op_type if at in info else "", count=count, detail=detail)

    beyond = int(np.count_nonzero(np.abs(truth[where]) > FP16_MAX))
    if beyond:
        return found(OVERFLOW, tensor, f"{beyond} values past 65504 in TensorFlow became inf")
    # This op, then the ops upstream that were not compared (fused): one of them made the first inf/NaN.
    candidates = [tensor]
    seen = {tensor}
    index = 0
    while index < len(candidates):
        for name in info[candidates[index]].inputs:
            if name in info and name in golden and name not in seen and not compared(name):
                seen.add(name)
                candidates.append(name)
        index += 1
    for name in candidates:
        item = info[name]
        if item.op_type not in UNDERFLOW_OPS:
            continue
        shape = golden[name].shape
        local = where if name == tensor else np.ones(shape, dtype=bool)
        for source in item.inputs:
            if source not in golden:
                continue
            values = _at(golden[source], shape, local) if local.shape == shape else None
            tiny = _underflows(values) if values is not None else 0
            if tiny:
                made_by = f" ({info[source].op_type})" if source in info else ""
                return found(UNDERFLOW, name, f"{tiny} values of its input {source}{made_by} lie between 0 and fp16's "
                             f"smallest subnormal ({FP16_SMALLEST:.2g}) in TensorFlow and are 0 in fp16; "
                             f"{item.op_type} of 0 is inf")
    for name in candidates[1:]:
        beyond = int(np.count_nonzero(np.abs(golden[name]) > FP16_MAX))
        if beyond:
            return found(OVERFLOW, name, f"{beyond} values past 65504 in TensorFlow became inf upstream")
    if np.isnan(actual[where]).any():
        return found(NAN_FROM_INF, tensor, "NaN where no input is out of fp16's range in TensorFlow: inf - inf or "
                     "0 * inf inside the op, from an inf made upstream")
    return found(UNCLASSIFIED, tensor, "no value out of fp16's range found in TensorFlow's tensors")
