"""One candidate: the pb converted to the stand-in with a keep_dtype file of the candidate's ops, run over the
bins by ONNX Runtime and compared with TensorFlow's outputs under compare's thresholds, through the same library
functions as `infer convert`, `infer run` and `infer compare`.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from atc_wrap.precision.modes import PrecisionMode
from atc_wrap.precision.op_controls import write_keep_dtype
from binio.document import json_float
from binio.manifest import DatasetManifest
from infer.compare import AippCheck, compare_run_folders
from infer.compare.options import CompareOptions
from infer.compare.result import CompareResult
from infer.contract import ModelContract
from infer.convert import ConvertOptions, convert_model
from infer.model_aipp import AippOptions, model_aipp
from infer.run import run_model
from infer.run.options import RunOptions

log = logging.getLogger(__name__)
KEEP_DTYPE_FILE = "keep_dtype.cfg"
_SHOWN_METRICS = ("CosineSimilarity", "MaxAbsoluteError", "RelativeEuclideanDistance", "RootMeanSquareError")


DatasetName = Literal["subset", "whole"]  # the batches a candidate is tried on: the first N samples, or all

@dataclass(frozen=True)
class Candidate:
    """One set of fp32 ops tried, and what compare said of it."""

    index: int
    ops: tuple[str, ...]
    stage: str  # why it was tried: baseline, every op in fp32, seeds, bisect 12/40, drop X, final
    dataset: DatasetName
    passed: bool
    verdict: str
    metrics: dict[str, dict[str, float]]  # output -> the metrics shown
    seconds: float
    headline: str = ""  # the verdict in one short line (compare's `headline`): what the command line prints

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "stage": self.stage, "dataset": self.dataset, "ops": list(self.ops),
                "op_count": len(self.ops), "passed": self.passed, "verdict": self.verdict, "headline": self.headline,
                "metrics": {out: {k: json_float(v) for k, v in m.items()} for out, m in self.metrics.items()},
                "seconds": round(self.seconds, 3)}


@dataclass(frozen=True)
class Dataset:
    """Bins and TensorFlow's outputs for them."""

    name: DatasetName
    manifest: DatasetManifest
    golden: Path


def _metrics(result: CompareResult) -> dict[str, dict[str, float]]:
    return {o.name: {name: o.metrics.value(name) for name in _SHOWN_METRICS} for o in result.outputs}


def stage_contract(contract: ModelContract, folder: Path) -> ModelContract:
    """A copy of the contract in `folder` with the same pb (a copy: the folder may be handed over), unconverted."""
    folder.mkdir(parents=True, exist_ok=True)
    pb = folder / Path(contract.pb).name
    if not pb.is_file():
        shutil.copyfile(contract.pb_path, pb)
    return replace(contract, path=folder / "model.json", pb=pb.name, converted=None).save()


def replayed_settings(contract: ModelContract, folder: Path) -> dict[str, Any]:
    """The user's conversion's --input-fp16-nodes, --output-type and AIPP (its config written into `folder`), as
    ConvertOptions fields: the candidates take the same bins as the model the user converted."""
    settings = contract.converted.settings if contract.converted is not None else {}
    replayed: dict[str, Any] = {"input_fp16_nodes": str(settings.get("input_fp16_nodes", "") or ""),
                                "output_type": str(settings.get("output_type", "") or "")}
    aipp = model_aipp(contract)
    if aipp is not None:
        config = folder / "user-aipp.cfg"
        config.write_text(aipp.to_prototxt(), encoding="utf-8")
        replayed["aipp"] = AippOptions(config=config, input_rank=aipp.related_input_rank)
    return replayed


class Trials:
    """Converts, runs and compares candidates one after the other in `work`, remembering every verdict."""

    def __init__(self, contract: ModelContract, precision_mode: PrecisionMode, work: Path,
                 compare_options: CompareOptions,
                 on_candidate: Callable[[Candidate], None] | None = None, *, soc_version: str = "",
                 allow_host_ops: bool = False) -> None:
        self.contract = contract
        self.soc_version = soc_version  # the chip whose operator table plans every candidate
        self.allow_host_ops = allow_host_ops
        self.precision_mode = precision_mode
        self.work = work
        self.compare_options = compare_options
        self.on_candidate = on_candidate
        self.staged = stage_contract(contract, work / "model")
        self.tried: list[Candidate] = []
        self._verdicts: dict[tuple[str, frozenset[str]], Candidate] = {}
        self.baseline: CompareResult | None = None  # the comparison with no op kept, for the layer-by-layer seeds
        # Per dataset: the AIPP check. Every candidate replays the same AIPP config on the same bins, so its answer
        # is the first candidate's.
        self._preprocessing: dict[str, tuple[AippCheck, ...]] = {}

    def convert(self, ops: tuple[str, ...], folder: Path | None = None) -> ModelContract:
        """The stand-in with `ops` kept in fp32 (the contract's --input-fp16-nodes and --output-type kept)."""
        staged = self.staged if folder is None else stage_contract(self.contract, folder)
        keep = write_keep_dtype(staged.folder / KEEP_DTYPE_FILE, ops) if ops else None
        options = ConvertOptions(target="onnx", precision_mode=self.precision_mode, keep_dtype=keep,
                                 soc_version=self.soc_version, allow_host_ops=self.allow_host_ops,
                                 **replayed_settings(self.contract, staged.folder))
        return convert_model(staged, options).contract

    def compare(self, staged: ModelContract, dataset: Dataset) -> CompareResult:
        """Runs the converted stand-in over the dataset and compares it with the golden outputs."""
        # The bins were made for the user's converted model, not this candidate: no warning that they were.
        options = RunOptions(backend="onnxrt", bins_made_for=dataset.manifest.model_sha256)
        folder = run_model(staged.path, dataset.manifest.root, self.work / "runs", options).folder
        try:
            result = compare_run_folders(staged, dataset.manifest, folder, dataset.golden, self.compare_options,
                                         golden_source="tensorflow",
                                         preprocessing=self._preprocessing.get(dataset.name))
            self._preprocessing.setdefault(dataset.name, result.preprocessing)
            return result
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def evaluate(self, ops: tuple[str, ...], stage: str, dataset: Dataset) -> Candidate:
        key = (dataset.name, frozenset(ops))
        if key in self._verdicts:
            return self._verdicts[key]
        start = time.monotonic()
        result = self.compare(self.convert(ops), dataset)
        if not ops and dataset.name == "whole":
            self.baseline = result
        candidate = Candidate(index=len(self.tried) + 1, ops=ops, stage=stage, dataset=dataset.name,
                              passed=result.passed, verdict=result.verdict(), headline=result.headline(),
                              metrics=_metrics(result), seconds=time.monotonic() - start)
        self.tried.append(candidate)
        self._verdicts[key] = candidate
        if self.on_candidate is not None:
            self.on_candidate(candidate)
        return candidate
