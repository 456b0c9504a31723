"""What a comparison compared: both sides (backend, model file, sha256, precision mode), the dataset and its sample
order, the thresholds, the infer version and the date. Every report records it and the verdict line names it, so a
report read weeks later still says which model was judged against which.

Golden and actual computed from the same graph on the same backend prove nothing about a conversion (a
`infer run --backend tf` folder given as --actual, or a model that was never converted): `refuse_same_backend`
stops such a comparison unless it is asked for on purpose.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from binio.binfile import sha256_file
from binio.manifest import DatasetManifest
from binio.name_column import NameColumn, is_name_list
from infer._version import __version__
from infer.compare.errors import RunFolderError, SameBackendError
from infer.contract import ModelContract
from infer.run.record import RunRecord, has_record, load_run

log = logging.getLogger(__name__)
_BACKEND_NAMES = {"tf": "tensorflow"}  # run.json's short name -> what the verdict line says


def infer_version() -> str:
    """The version of the code that runs (infer.__version__, which the installed metadata is built from)."""
    return __version__


@dataclass(frozen=True)
class Side:
    """Who computed one side's outputs: the backend, the model file and its sha256, the precision it ran in."""

    role: str  # golden | actual
    run_folder: str
    backend: str  # tensorflow | onnxrt | msame | ais_bench; "" when the folder has no run.json
    model: str  # the model file as run.json (or, lacking one, model.json) names it
    model_sha256: str
    precision_mode: str = ""  # the converted model's precision mode; "" for the frozen pb
    recorded: bool = True  # False: no run.json, so backend and model are what model.json says, not what ran
    chip: str = ""  # the chip the om names itself (its soc_version); "" for any other model
    read_from: str = ""  # where the outputs are read: a staged copy in infer's layout of a tool's own folder
    layout: str = ""  # a tool's own folder: its files' formats and how they were matched to the dataset

    @property
    def outputs_folder(self) -> Path:
        """The folder whose ``<stem>_output_<i>.bin`` files the comparison reads."""
        return Path(self.read_from or self.run_folder)

    def describe(self) -> str:
        """``onnxrt model.onnx force_fp16 (5e6f7a8b)``; ``msame model.om on Ascend310 (from the om) ...``."""
        backend = self.backend or "unrecorded backend"
        words = [backend, Path(self.model).name or "unknown model"]
        if self.chip:
            words.append(f"on {self.chip} (from the om)")
        if self.precision_mode:
            words.append(self.precision_mode)
        sha = self.model_sha256[:8] or "no sha256"
        return " ".join(words) + f" ({sha}{'' if self.recorded else ', no run.json'})"

    def to_json(self) -> dict[str, Any]:
        return {"role": self.role, "run_folder": self.run_folder, "backend": self.backend, "model": self.model,
                "model_sha256": self.model_sha256, "precision_mode": self.precision_mode,
                "recorded_in_run_json": self.recorded, "chip": self.chip, "layout": self.layout}


def _precision(contract: ModelContract, sha256: str) -> str:
    converted = contract.converted
    return converted.precision_mode if converted is not None and sha256 == converted.sha256 else ""


def run_side(contract: ModelContract, folder: Path, role: str) -> Side:
    """The side `folder` holds, from its run.json; without one (msame wrote it alone), what model.json says the
    run must have used: the frozen pb for the golden side, the converted model for the actual side."""
    if has_record(folder):
        record = load_run(folder)
        check_model_of(record, contract, role)
        return Side(role=role, run_folder=str(folder), backend=_BACKEND_NAMES.get(record.backend, record.backend),
                    model=record.model_path, model_sha256=record.model_sha256,
                    precision_mode=_precision(contract, record.model_sha256))
    if role == "actual" and contract.converted is not None:
        return Side(role=role, run_folder=str(folder), backend="", model=contract.converted.path,
                    model_sha256=contract.converted.sha256, precision_mode=contract.converted.precision_mode,
                    recorded=False)
    return Side(role=role, run_folder=str(folder), backend="", model=contract.pb, model_sha256=contract.pb_sha256,
                recorded=False)


def check_model_of(record: RunRecord, contract: ModelContract, role: str) -> None:
    """The model run.json says computed a side, against `contract`. The actual side's must be a model the
    contract describes (its converted model, or its frozen pb): outputs of a model converted again since, or of
    another model, are refused. The golden side may come from another copy of the graph on purpose (TensorFlow on
    the original, before a change under test); the report records which, and a warning says so."""
    known = {contract.pb_sha256: "frozen pb"}
    if contract.converted is not None:
        known[contract.converted.sha256] = "converted model"
    if record.model_sha256 in known:
        return
    said = ", ".join(f"{what} {sha[:12]}" for sha, what in known.items())
    if role == "golden":
        log.warning("--golden %s: computed by model %s (run.json), not by a model of %s (%s); compared as given",
                    record.folder, record.model_sha256[:12], contract.path, said)
        return
    raise RunFolderError(f"{record.path}: model.sha256 {record.model_sha256[:12]}... is not a model of "
                         f"{contract.path} ({said}): the --{role} outputs are of another model",
                         hint="run the model this model.json describes again (infer run)")


def tensorflow_side(contract: ModelContract, folder: Path | None = None) -> Side:
    """The golden side infer computes itself: TensorFlow on the frozen pb."""
    return Side(role="golden", run_folder="" if folder is None else str(folder), backend="tensorflow",
                model=contract.pb, model_sha256=contract.pb_sha256)


def refuse_same_backend(contract: ModelContract, actual: Side, golden: Side) -> None:
    """Refuses a comparison of one graph with itself on one backend, which would pass whatever the conversion did."""
    hint = "compare the converted model's run (infer convert, then infer run); --allow-same-backend compares a " \
           "backend with itself on purpose"
    # A golden folder without run.json is taken for what --golden promises: TensorFlow's outputs of the pb.
    golden_backend = golden.backend if golden.recorded else "tensorflow"
    if actual.recorded and actual.backend == golden_backend and actual.model_sha256 == golden.model_sha256:
        raise SameBackendError(
            f"--actual {actual.run_folder}: computed by {actual.describe()}, the same graph on the same backend as "
            "the golden outputs; the comparison would prove nothing about a conversion", hint=hint)
    if contract.converted is None and (not actual.recorded or actual.model_sha256 == contract.pb_sha256):
        raise SameBackendError(
            f"{contract.path}: the model was never converted, so --actual {actual.run_folder} holds outputs of the "
            "frozen graph, as the golden side does; the comparison would prove nothing about a conversion",
            hint="infer convert records the converted model in model.json (--use-om FILE.om an om built "
                 "elsewhere); --allow-same-backend compares the frozen graph with itself on purpose")


@dataclass(frozen=True)
class SampleOrder:
    """How one input's samples were ordered when dump-bin wrote them: the sample index is a position in this."""

    input: str
    source: str
    order: str  # "natural (...)", "sorted ...", "" for an array (its rows)
    names: Sequence[str] = ()  # the source files in sample order, when the source was a folder of files

    def describe(self, shown: int = 3) -> str:
        text = f"{self.input} from {self.source or 'an unnamed source'}"
        if self.order:
            text += f" in {self.order} order"
        if self.names:
            head = ", ".join(self.names[:shown])
            tail = f", ..., {self.names[-1]}" if len(self.names) > shown + 1 else (
                f", {self.names[-1]}" if len(self.names) == shown + 1 else "")
            text += f": {head}{tail} ({len(self.names)} files)"
        return text

    def to_json(self) -> dict[str, Any]:
        return {"input": self.input, "source": self.source, "order": self.order, "names": list(self.names)}


def sample_order(manifest: DatasetManifest) -> tuple[SampleOrder, ...]:
    """Each input's source and order, as dataset.json records them."""
    found = []
    for item in manifest.inputs:
        prep = item.preprocessing
        names = prep.get("files") if is_name_list(prep.get("files")) else prep.get("file_names")
        order = str(prep.get("order", ""))
        if not order and isinstance(prep.get("original_source"), str):
            order = f"re-batched from {prep['original_source']}"
        found.append(SampleOrder(input=item.tensor, source=item.source, order=order.removesuffix(" order"),
                                 names=NameColumn.of(map(str, names)) if is_name_list(names) else ()))
    return tuple(found)


def sample_names(manifest: DatasetManifest) -> Sequence[str] | None:
    """One source file name per sample (an image, or a bare bin holding one sample), from the first input whose
    source had them; None when no input's source names its samples (arrays, generators, bins of several rows)."""
    for order in sample_order(manifest):
        if len(order.names) == manifest.samples:
            return order.names
    return None


def sample_source(manifest: DatasetManifest, names: Sequence[str] | None, index: int) -> str:
    """Where sample `index` came from: its file, else row `index` of the first input's source."""
    if names is not None and 0 <= index < len(names):
        return names[index]
    source = manifest.inputs[0].source if manifest.inputs else ""
    return f"{Path(source).name or 'sample'}[{index}]"


@dataclass(frozen=True)
class Provenance:
    """Everything a report needs to say what it compared."""

    infer_version: str
    date: str  # ISO 8601, UTC
    golden: Side
    actual: Side
    pb_sha256: str
    converted_sha256: str
    precision_mode: str
    emulation: dict[str, Any]  # the stand-in's emulation of the precision mode; {} for an om or no conversion
    dataset: str
    dataset_sha256: str  # of dataset.json, which holds every bin's digest
    samples: int
    thresholds: dict[str, dict[str, float]]  # output -> metric -> limit, dataset-wide
    sample_thresholds: dict[str, dict[str, float]]  # output -> metric -> limit, for each sample
    sample_order: tuple[SampleOrder, ...] = field(default_factory=tuple)

    def sides(self) -> str:
        """``golden: tensorflow model.pb (1a2b3c4d) | actual: onnxrt model.onnx force_fp16 (5e6f7a8b) | 60 samples,
        dataset 9c0d1e2f``."""
        return (f"golden: {self.golden.describe()} | actual: {self.actual.describe()} | {self.samples} samples, "
                f"dataset {self.dataset_sha256[:8]}")

    def to_json(self) -> dict[str, Any]:
        return {"infer_version": self.infer_version, "date": self.date, "golden": self.golden.to_json(),
                "actual": self.actual.to_json(), "pb_sha256": self.pb_sha256,
                "converted_sha256": self.converted_sha256, "precision_mode": self.precision_mode,
                "emulation": self.emulation, "dataset": self.dataset, "dataset_sha256": self.dataset_sha256,
                "samples": self.samples, "thresholds": self.thresholds, "sample_thresholds": self.sample_thresholds,
                "sample_order": [o.to_json() for o in self.sample_order]}


def make_provenance(contract: ModelContract, manifest: DatasetManifest, golden: Side, actual: Side,
                    thresholds: dict[str, dict[str, float]],
                    sample_thresholds: dict[str, dict[str, float]]) -> Provenance:
    converted = contract.converted
    emulation = converted.settings.get("emulation") if converted is not None else None
    return Provenance(
        infer_version=infer_version(),
        date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        golden=golden, actual=actual, pb_sha256=contract.pb_sha256,
        converted_sha256=converted.sha256 if converted is not None else "",
        precision_mode=converted.precision_mode if converted is not None else "",
        emulation=dict(emulation) if isinstance(emulation, dict) else {},
        dataset=str(manifest.root), dataset_sha256=sha256_file(manifest.path), samples=manifest.samples,
        thresholds=thresholds, sample_thresholds=sample_thresholds, sample_order=sample_order(manifest),
    )
