"""What `infer tune-precision` is asked (`TuneOptions`): the one declaration of its flags and of the pipeline's
[tune] keys. Standard library only: `infer tune-precision --help` builds its flags from it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from atc_wrap.atc.soc import ASSUMED_SOC_VERSION
from atc_wrap.precision.modes import (
    DEFAULT_PRECISION_MODE,
    KEEP_DTYPE_MODES,
    KeepDtypeMode,
    check_precision_mode,
)
from infer._option_fields import allow_host_ops_setting, setting
from infer.compare.options import DEFAULT_ATOL, DEFAULT_RTOL, threshold_setting
from infer.compare.thresholds import Thresholds
from infer.tune._search import MODES, SearchMode
from infer.tune.errors import TuneError

# The chip when neither --soc-version nor the contract names one: the stand-in's assumed chip, whose operator table
# the candidates are planned with and which the ATC command written names.
DEFAULT_SOC = ASSUMED_SOC_VERSION


@dataclass(frozen=True)
class TuneOptions:
    """In pipeline.toml: [tune] (`infer pipeline tune`)."""

    precision_mode: KeepDtypeMode = setting(DEFAULT_PRECISION_MODE,
                                            help=f"The mode to tune, one where --keep-dtype changes anything "
                                                 f"({DEFAULT_PRECISION_MODE} is ATC's default).")
    thresholds: Thresholds = threshold_setting()
    atol: float = setting(DEFAULT_ATOL, help="Absolute tolerance of the allclose pass rate.")
    rtol: float = setting(DEFAULT_RTOL, help="Relative tolerance of the allclose pass rate.")
    samples: int | None = setting(None, unset=0, shown="the whole dataset",
                                  help="Search on the batches holding the first N samples; the set found is checked "
                                       "on the whole dataset.")
    max_ops: int | None = setting(None, unset=0, shown="no limit",
                                  help="A set of more ops than this counts as not found.")
    mode: SearchMode = setting("bisect", help="How the ops are searched: bisect halves them in graph order, linear "
                                              "tries one at a time (Polygraphy's debug precision's names).")
    seeds: bool = setting(True, negative="--no-seeds",
                          help="Start from the ops compare --layerwise points at (first diverging, inf/NaN); "
                               "--no-seeds searches from the graph's order alone.")
    golden: Path | None = setting(None, short="-g", unset="", shown="run the frozen pb",
                                  help="TensorFlow's run folder for the dataset.")
    soc_version: str = setting("", shown=f"the contract's, else {DEFAULT_SOC}",
                               help="The chip: its operator table plans every candidate (only ops it can keep in "
                                    "fp32 are searched), and the ATC command line written names it.")
    force: bool = setting(False, toml=False, help="Replace an earlier tune-precision's files in -o.")
    allow_host_ops: bool = allow_host_ops_setting()

    def __post_init__(self) -> None:
        check_precision_mode(self.precision_mode)
        if self.precision_mode not in KEEP_DTYPE_MODES:
            raise TuneError(f"--precision-mode {self.precision_mode}: keep_dtype changes nothing in this mode; "
                            f"expected one of {', '.join(KEEP_DTYPE_MODES)}")
        if self.mode not in MODES:
            raise TuneError(f"--mode {self.mode}: expected one of {', '.join(MODES)}")
        for flag, value in (("--samples", self.samples), ("--max-ops", self.max_ops)):
            if value is not None and value < 1:
                raise TuneError(f"{flag} {value}: expected 1 or more")
