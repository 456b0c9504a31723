"""What `infer compare` is asked (`CompareOptions`) and how it reports progress: apart from the comparison, so the
passes (`infer.compare._passes`), tune-precision and the pipeline take them without importing the command's module.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from binio.errors import InferError
from infer.compare._expected import DEFAULT_FACTOR
from infer.compare.thresholds import Thresholds


@dataclass(frozen=True)
class CompareOptions:
    thresholds: Thresholds = field(default_factory=Thresholds)
    atol: float = 1e-4
    rtol: float = 1e-3
    topk: int = 5
    labels: Path | None = None
    worst_samples: int = 10
    scatter_points: int = 4000
    workers: int = 1  # processes for the golden outputs and for the metrics, the batches split between them
    allow_same_backend: bool = False  # compare one graph with itself on one backend, on purpose
    # The expected-error band (`infer.compare._expected`): None = on for an om where the stand-in is installed.
    expected_from_emulation: bool | None = None
    expected_factor: float = DEFAULT_FACTOR
    fail_on_expected: bool = False  # an output past the band fails the run (implies the band is computed)

    def __post_init__(self) -> None:
        """Refuses values no comparison can use, whether they came from the command line or a pipeline file."""
        if self.topk < 1:
            raise InferError(f"--topk {self.topk}: expected 1 or more")
        if not self.expected_factor >= 1:  # NaN too
            raise InferError(f"--expected-factor {self.expected_factor}: expected 1 or more")
        if self.fail_on_expected and self.expected_from_emulation is False:
            raise InferError("--fail-on-expected with --no-expected-from-emulation: the band it fails on would not "
                             "be computed", hint="leave out one of them")
        for name, value in (("--atol", self.atol), ("--rtol", self.rtol)):
            if not value >= 0:  # NaN too
                raise InferError(f"{name} {value}: expected 0 or more")


# Hears how far the comparison is: (what, done, total), e.g. ("golden", 3, 8) or ("probs:0", 5, 16).
CompareProgress = Callable[[str, int, int], None]
