"""The one shape every sample source has: a sample count, a sample shape, and rows read in order."""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np


class SampleSource(Protocol):
    """Samples of one model input. `read` is called with consecutive ranges, start to end, once each."""

    @property
    def samples(self) -> int | None:
        """How many samples; None for a generator, which yields as many as the other inputs have."""

    @property
    def sample_shape(self) -> tuple[int, ...]: ...

    @property
    def description(self) -> str:
        """What the manifest records as the source (a path, or ``random:7``)."""

    @property
    def preprocessing(self) -> dict[str, Any]:
        """What was done to the samples on the way (image resize/crop/normalise, file order), for the manifest."""

    def read(self, start: int, stop: int) -> np.ndarray:
        """Rows ``[start, stop)``, shaped ``(stop - start, *sample_shape)``, in the source's own dtype.

        The array stays valid and unchanged after later reads: dump-bin may still be writing (and hashing) it
        straight from the source while it reads the next batches."""

    def close(self) -> None: ...
