"""`infer inspect`: a path read by the reader its kind needs. A converted model.json's precision plan when asked
(--precision); an om (by its name, or a file of another name that starts as one) read without CANN; anything else is
a model source (checkpoint, meta graph, SavedModel, Keras file, frozen pb) inspected on the TensorFlow side."""

from __future__ import annotations

from pathlib import Path

from atc_wrap.ascend_files.om_file import starts_as_om
from atc_wrap.ascend_files.om_model import read_om
from atc_wrap.precision.plan import PrecisionPlan
from ckpt2pb.inspection import inspect_model
from infer.contract import load_contract
from infer.inspect.errors import InspectError
from infer.inspect.options import InspectOptions
from infer.inspect.result import InspectResult


def inspect_path(path: Path | str, options: InspectOptions | None = None) -> InspectResult:
    """What `path` holds, as the reader of its kind returns it (`InspectResult`); refused in one line (an
    `InferError`) where it cannot be read."""
    source = Path(path)
    options = options or InspectOptions()
    if options.precision:
        return InspectResult(source=source, plan=_precision_plan(source))
    if source.suffix.lower() == ".om" or starts_as_om(source):
        return InspectResult(source=source, om=read_om(source))  # one line for an encrypted, truncated or non-om file
    return InspectResult(source=source, graph=inspect_model(source))


def _precision_plan(path: Path) -> PrecisionPlan:
    contract = load_contract(path)
    if contract.converted is None:
        raise InspectError(f"{contract.path}: not converted, so it has no precision plan",
                           hint="infer convert it first")
    plan = contract.converted.plan()
    if plan is None:
        raise InspectError(f"{contract.path}: converted without a precision plan (by an infer before plans, or for "
                           "a chip with no operator table)", hint="infer convert it again")
    return plan
