"""``const:VALUE`` and ``random:SEED``: samples made up on the spot, for switches, masks and smoke runs.

A generator has no length of its own: it yields as many samples as the other inputs have (or ``--samples``).
Each row depends only on the seed and its index, so re-batching the same dataset gives the same values.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from binio.dtypes import dtype
from infer.dump_bin.errors import SourceError

GENERATOR_PREFIXES = ("const:", "random:")


def is_generator(text: str) -> bool:
    return text.startswith(GENERATOR_PREFIXES)


class GeneratedSource:
    """Rows in the model's own dtype: constant `value`, or uniform [0, 1) floats / integers in [0, 10) / bools."""

    def __init__(self, text: str, sample_shape: tuple[int, ...], dtype_name: str) -> None:
        kind, _, argument = text.partition(":")
        self.text = text
        self.kind = kind
        self._shape = sample_shape
        self._dt = dtype(dtype_name)
        try:
            if kind == "const":
                self.value = float(argument) if self._dt.is_float else int(argument)
            else:
                self.seed = int(argument)
        except ValueError:
            expected = "an integer seed" if kind == "random" else (
                "a number" if self._dt.is_float else f"an integer (the input is {self._dt.name})")
            raise SourceError(f"source {text!r}: expected {expected} after '{kind}:', found {argument!r}") from None

    @property
    def samples(self) -> int | None:
        return None

    @property
    def sample_shape(self) -> tuple[int, ...]:
        return self._shape

    @property
    def description(self) -> str:
        return self.text

    @property
    def preprocessing(self) -> dict[str, Any]:
        if self.kind == "const":
            return {"generator": "const", "value": self.value}
        return {"generator": "random", "seed": self.seed,
                "distribution": "uniform [0, 1)" if self._dt.is_float else "integers in [0, 10)"}

    def read(self, start: int, stop: int) -> np.ndarray:
        np_dtype = np.dtype(self._dt.numpy)
        if self.kind == "const":
            # The value is kept in a wide type here so that an out-of-range constant is counted by the checked cast.
            wide = np.float64 if self._dt.is_float else np.int64
            return np.full((stop - start, *self._shape), self.value, dtype=wide)
        rows = np.empty((stop - start, *self._shape), dtype=np_dtype)
        for offset, index in enumerate(range(start, stop)):
            rng = np.random.default_rng([self.seed, index])
            if self._dt.is_float:
                rows[offset] = rng.random(self._shape)
            elif self._dt.is_bool:
                rows[offset] = rng.integers(0, 2, self._shape).astype(bool)
            else:
                rows[offset] = rng.integers(0, 10, self._shape)
        return rows

    def close(self) -> None:
        pass
