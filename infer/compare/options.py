"""What `infer compare` is asked (`CompareOptions`) and how it reports progress: apart from the comparison, so the
passes, tune-precision and the pipeline take them without importing the command's module. The one declaration of
compare's flags and of [compare]'s keys. Standard library only: `infer compare --help` builds its flags from it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from binio.errors import InferError
from binio.limits import check_workers
from infer._option_fields import allow_host_ops_setting, setting
from infer.compare.thresholds import Thresholds, thresholds_key

DEFAULT_ATOL = 1e-4
DEFAULT_RTOL = 1e-3
DEFAULT_TOPK = 5  # k where --topk is left out (or the class count, where fewer)
DEFAULT_FACTOR = 10.0  # how many times the emulated error an output may reach (`infer.compare._judge.expected`)

THRESHOLD_HELP = ("metric=value or output:metric=value (value 'off' lifts it); sample:metric=value limits each "
                  "sample and fails the run. Default msit's: cosine < 0.99, RED > 0.05, KL > 0.005, RMSE > 1.0 or "
                  "MeanRE > 1.0 fails.")


def _parse_thresholds(texts: list[str], flag: str) -> Thresholds:
    return Thresholds.parse(texts)


def threshold_setting() -> Any:
    """The thresholds field as compare and tune-precision both declare it."""
    return setting(default_factory=Thresholds, flag="--threshold", short="-t", repeat=True,
                   parse=_parse_thresholds, decode=thresholds_key, help=THRESHOLD_HELP)


@dataclass(frozen=True)
class CompareOptions:
    """In pipeline.toml: [compare], labels relative to it."""

    labels: Path | None = setting(None, unset="", help="0-based class indices: one a line in the dataset's order "
                                                       "(.txt, .npy), or 'name label' lines matched to the samples' "
                                                       "files by name.")
    topk: int | None = setting(None, shown=f"{DEFAULT_TOPK}, or the class count where fewer", example=DEFAULT_TOPK,
                               help="k of the top-k agreement and accuracy of classifier outputs (at most their "
                                    "class count).")
    thresholds: Thresholds = threshold_setting()
    atol: float = setting(DEFAULT_ATOL, help="Absolute tolerance of the allclose pass rate.")
    rtol: float = setting(DEFAULT_RTOL, help="Relative tolerance of the allclose pass rate.")
    worst_samples: int = setting(10, flag=False, toml=False)
    scatter_points: int = setting(4000, flag=False, toml=False)
    workers: int = setting(1, help="Processes for the golden outputs and for the metrics, the batches split between "
                                   "them.")
    allow_same_backend: bool = setting(False, help="Compare one graph with itself on one backend, on purpose (a "
                                                   "[run] backend = \"tf\" compared with TF).")
    allow_host_ops: bool = allow_host_ops_setting()
    # The expected-error band (`infer.compare._judge.expected`): None = on for an om and for an fp32 conversion, where
    # the stand-in is installed (`expected_by_default`).
    expected_from_emulation: bool | None = setting(
        None, example=True, negative="--no-expected-from-emulation", shown="on for an om or an fp32 conversion where "
                                                                           "the stand-in is installed",
        help="Set each output's error against the stand-in's emulation of the same precision mode.")
    expected_factor: float = setting(DEFAULT_FACTOR, help="How many times its band (the emulated error) an output, or "
                                                          "a --layerwise tensor, may reach.")
    fail_on_expected: bool | None = setting(
        None, example=True, negative="--no-fail-on-expected", shown="on where the band is computed for an om or an "
                                                                    "fp32 conversion",
        help="Fail the run when an output is past --expected-factor times its band.")
    set_outputs: tuple[str, ...] = setting((), flag="--set-output", repeat=True,
                                           help="An output whose rows are a set (the boxes an NMS kept, a top-k): "
                                                "each sample's rows matched before the metrics, boxes by IoU. "
                                                "Outputs computed from NonMaxSuppression or TopK are found alone.")
    layerwise: bool = setting(False, help="Compare every intermediate tensor on one batch (ONNX stand-in): the "
                                          "first layer whose outputs diverge.")
    npu_dump: Path | None = setting(None, toml=False, help="--layerwise against this NPU dump folder (infer run "
                                                           "--dump's OUT/<timestamp>/dump) through the om's fusion "
                                                           "map, in place of the stand-in.")

    def __post_init__(self) -> None:
        """Refuses values no comparison can use, whether they came from the command line or a pipeline file."""
        if self.topk is not None and self.topk < 1:
            raise InferError(f"--topk {self.topk}: expected 1 or more")
        check_workers(self.workers, "--workers")
        if not self.expected_factor >= 1:  # NaN too
            raise InferError(f"--expected-factor {self.expected_factor}: expected 1 or more")
        if self.fail_on_expected is True and self.expected_from_emulation is False:
            raise InferError("--fail-on-expected with --no-expected-from-emulation: the band it fails on would not "
                             "be computed", hint="leave out one of them")
        for name, value in (("--atol", self.atol), ("--rtol", self.rtol)):
            if not value >= 0:  # NaN too
                raise InferError(f"{name} {value}: expected 0 or more")


# Hears how far the comparison is: (what, done, total), e.g. ("golden", 3, 8) or ("probs:0", 5, 16).
CompareProgress = Callable[[str, int, int], None]
