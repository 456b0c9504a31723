"""Statistics of a tensor as bin-info shows them: shape, dtype, min/max/mean, NaN and inf counts."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class TensorStats:
    """min/max/mean over the finite values; NaN and inf counted apart so one NaN does not hide the rest."""

    shape: tuple[int, ...]
    dtype: str
    values: int
    finite: int
    nan: int
    inf: int
    min: float | None  # None when no value is finite
    max: float | None
    sum: float  # of the finite values, kept so summaries can merge means exactly

    @property
    def mean(self) -> float | None:
        return self.sum / self.finite if self.finite else None

    def to_json(self) -> dict[str, object]:
        return {"shape": list(self.shape), "dtype": self.dtype, "values": self.values, "nan": self.nan,
                "inf": self.inf, "min": self.min, "max": self.max, "mean": self.mean}


def tensor_stats(array: np.ndarray) -> TensorStats:
    values = int(array.size)
    data = np.asarray(array)
    if data.dtype.kind == "f":
        nan = int(np.isnan(data).sum())
        inf = int(np.isinf(data).sum())
        finite_values = data[np.isfinite(data)] if nan or inf else data.reshape(-1)
    else:
        nan = inf = 0
        finite_values = data.reshape(-1)
    finite = int(finite_values.size)
    if finite == 0:
        return TensorStats(tuple(data.shape), data.dtype.name, values, 0, nan, inf, None, None, 0.0)
    return TensorStats(
        shape=tuple(int(d) for d in data.shape), dtype=data.dtype.name, values=values, finite=finite, nan=nan,
        inf=inf, min=float(finite_values.min()), max=float(finite_values.max()),
        sum=float(finite_values.sum(dtype=np.float64)),
    )


def merge_stats(parts: Iterable[TensorStats], shape: tuple[int, ...]) -> TensorStats:
    """The stats of several tensors together (a dataset's files), reported under `shape`."""
    items = list(parts)
    mins = [p.min for p in items if p.min is not None]
    maxs = [p.max for p in items if p.max is not None]
    return TensorStats(
        shape=shape, dtype=items[0].dtype if items else "", values=sum(p.values for p in items),
        finite=sum(p.finite for p in items), nan=sum(p.nan for p in items), inf=sum(p.inf for p in items),
        min=min(mins) if mins else None, max=max(maxs) if maxs else None, sum=sum(p.sum for p in items),
    )
