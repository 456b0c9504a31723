"""`infer compare`: the converted model's outputs against TensorFlow's, streamed batch by batch.

The two passes over each output's batches and their fold are `infer.compare.passes`: here they run in this process
over one shard of every batch, under `--workers N` (`infer.compare.parallel`) in N processes, with equal results.
Each batch file is memory-mapped, so memory holds a few batches, never the dataset.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from binio.errors import InferError
from binio.manifest import DatasetManifest, dataset_folder, load_manifest
from binio.spec import TensorSpec
from infer.compare.passes import measure_output
from infer.compare.result import CompareResult, OutputResult
from infer.compare.sources import OutputPair, output_pairs, resolve_run_folder, written_specs
from infer.compare.thresholds import Thresholds
from infer.compare.topk import is_classifier, load_labels
from infer.contract import ModelContract, as_contract

log = logging.getLogger(__name__)


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

    def __post_init__(self) -> None:
        """Refuses values no comparison can use, whether they came from the command line or a pipeline file."""
        if self.topk < 1:
            raise InferError(f"--topk {self.topk}: expected 1 or more")
        for name, value in (("--atol", self.atol), ("--rtol", self.rtol)):
            if not value >= 0:  # NaN too
                raise InferError(f"{name} {value}: expected 0 or more")


def compare_output(pair: OutputPair, thresholds: Thresholds, options: CompareOptions,
                   labels: np.ndarray | None) -> OutputResult:
    """One output over the whole dataset, in two streaming passes: the one shard of every stem, in this process."""
    return measure_output(pair, thresholds, options, labels, [frozenset(pair.manifest.stems)])


def dataset_labels(path: Path | None, manifest: DatasetManifest, outputs: Sequence[TensorSpec]) -> np.ndarray | None:
    """The labels file's classes, one per sample of the dataset (padding excluded), each a class index of the
    model's classifier outputs (0-based); None without a file."""
    if path is None:
        return None
    labels = load_labels(path)
    if labels.size != manifest.samples:
        raise InferError(f"{path}: {labels.size} labels for a dataset of {manifest.samples} samples",
                         hint="one label per sample, padding excluded, in the dataset's order")
    classifiers = {spec.name: spec.shape[1] for spec in outputs
                   if len(spec.shape) == 2 and spec.shape[0] in (None, manifest.batch) and spec.shape[1] is not None
                   and is_classifier((manifest.batch, spec.shape[1]), spec.dt.is_float)}
    if classifiers:
        name = max(classifiers, key=lambda n: classifiers[n] or 0)
        classes = classifiers[name] or 0
        outside = np.flatnonzero((labels < 0) | (labels >= classes))
        if outside.size:
            sample = int(outside[0])
            raise InferError(f"{path}: label {int(labels[sample])} of sample {sample} is not a class of {name} "
                             f"(0 to {classes - 1})", hint="labels are 0-based class indices")
    return labels


def compare_run_folders(contract: ModelContract, manifest: DatasetManifest, actual_dir: Path, golden_dir: Path,
                        options: CompareOptions, *, golden_source: str = "given") -> CompareResult:
    """Both sides already on disk in msame's layout: the converted model's outputs and TensorFlow's."""
    actual_dir = resolve_run_folder(actual_dir, what="--actual")
    golden_dir = resolve_run_folder(golden_dir, what="--golden")
    pairs = output_pairs(written_specs(actual_dir, contract.model_outputs, manifest, what="--actual"),
                         written_specs(golden_dir, contract.outputs, manifest, what="--golden"), actual_dir,
                         golden_dir, manifest)
    thresholds = options.thresholds
    thresholds.check_outputs([p.name for p in pairs])
    labels = dataset_labels(options.labels, manifest, contract.outputs)
    if options.workers > 1 and manifest.file_count > 1:
        from infer.compare.parallel import compare_outputs_in_workers

        outputs = compare_outputs_in_workers(pairs, thresholds, options, labels)
    else:
        outputs = tuple(compare_output(pair, thresholds, options, labels) for pair in pairs)
    return CompareResult(
        contract=str(contract.path), dataset=str(manifest.root), actual_dir=str(actual_dir),
        golden_dir=str(golden_dir), golden_source=golden_source, samples=manifest.samples,
        padding=manifest.padding, outputs=outputs,
    )


def compare(model: ModelContract | Path | str, dataset: DatasetManifest | Path | str, actual: Path | str, *,
            golden: Path | None = None,
            options: CompareOptions | None = None, layerwise: bool = False, dump_golden: Path | None = None,
            cache_root: Path | None = None, on_golden_run: Callable[[], None] | None = None) -> CompareResult:
    """The whole command: find or make the golden outputs, compare, and (optionally) go layer by layer.
    `on_golden_run` hears when TensorFlow is about to compute the golden outputs (not when they are cached)."""
    options = options or CompareOptions()
    if dump_golden is not None:
        from infer.compare.reports import check_output_folder

        check_output_folder(dump_golden, "--dump-golden")
    contract, actual = as_contract(model), Path(actual)
    manifest = load_manifest(dataset_folder(dataset))
    if golden is not None:
        golden_dir, source = Path(golden), "given"
    else:
        from infer.compare.golden import tensorflow_golden

        # What the user named is checked before TensorFlow runs (seconds to minutes) rather than after it.
        resolve_run_folder(actual, what="--actual")
        options.thresholds.check_outputs([s.name for s in contract.outputs])
        dataset_labels(options.labels, manifest, contract.outputs)
        golden_dir, source = tensorflow_golden(contract, manifest, cache_root=cache_root, on_run=on_golden_run,
                                               workers=options.workers)
    result = compare_run_folders(contract, manifest, actual, golden_dir, options, golden_source=source)
    if layerwise or dump_golden is not None:
        from infer.compare.layerwise import compare_layers

        layers = compare_layers(contract, manifest, options.thresholds, atol=options.atol, rtol=options.rtol,
                                with_converted=layerwise, dump_golden=dump_golden)
        result = replace(result, layerwise=layers if layerwise else None,
                         dumped_golden=str(dump_golden) if dump_golden is not None else "")
    return result
