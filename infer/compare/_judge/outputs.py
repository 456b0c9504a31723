"""The outputs judged: both sides' outputs paired, each measured over the whole dataset (in this process or in
`--workers` processes: `infer.compare._judge.passes`), the expected-error band beside msit's limits, the checks that
make the verdict say less than it seems (AIPP, constant outputs, the fp16 grid), and the provenance: one
`CompareResult`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from binio.errors import InferError
from binio.manifest import DatasetManifest
from binio.spec import TensorSpec
from infer.compare._judge.aipp_check import AippCheck, check_aipp
from infer.compare._judge.constant_outputs import with_inputs_same
from infer.compare._judge.expected import (
    ExpectedError,
    emulated_model,
    emulated_run,
    expected_error,
    fails_on_expected,
    wants_expected,
)
from infer.compare._judge.fp16_grid import outputs_on_fp16_grid
from infer.compare._judge.labels import labels_for_samples
from infer.compare._judge.passes import (
    Measured,
    batch_counter,
    check_topk,
    compare_outputs_in_workers,
    compare_outputs_on_ray,
    measure_output,
)
from infer.compare._judge.topk import is_classifier
from infer.compare._sides.golden import CACHE_FOLDER
from infer.compare._sides.provenance import Side, make_provenance, sample_names
from infer.compare._sides.run_folders import OutputPair, output_pairs, written_specs
from infer.compare.options import CompareOptions, CompareProgress
from infer.compare.result import CompareResult, OutputResult
from infer.compare.thresholds import Thresholds
from infer.contract import ModelContract
from infer.run.options import ScaleOptions


def compare_output(pair: OutputPair, thresholds: Thresholds, options: CompareOptions,
                   labels: np.ndarray | None, progress: CompareProgress | None = None) -> Measured:
    """One output over the whole dataset, in two streaming passes: the one shard of every stem, in this process."""
    return measure_output(pair, thresholds, options, labels, [frozenset(pair.manifest.stems)],
                          on_batch=batch_counter(pair, progress))


def dataset_labels(path: Path | None, manifest: DatasetManifest, outputs: Sequence[TensorSpec]) -> np.ndarray | None:
    """The labels file's classes, one per sample of the dataset (padding excluded), each a class index of the
    model's classifier outputs (0-based); None without a file. A file of ``name label`` lines is matched to the
    samples by name (`infer.compare._judge.labels`), a file of bare labels by position."""
    if path is None:
        return None
    labels = labels_for_samples(path, manifest.samples, sample_names(manifest))
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


def _pairs(contract: ModelContract, manifest: DatasetManifest, actual_dir: Path, golden_dir: Path, *,
           what: str = "--actual", actual_written: tuple[TensorSpec, ...] | None = None) -> tuple[OutputPair, ...]:
    """Each output's two sides, as the run folders wrote them (`actual_written`: the actual side's, where the
    caller read them already)."""
    if actual_written is None:
        actual_written = written_specs(actual_dir, contract.model_outputs, manifest, what=what)
    return output_pairs(actual_written, written_specs(golden_dir, contract.outputs, manifest, what="--golden"),
                        actual_dir, golden_dir, manifest)


def measure_outputs(pairs: tuple[OutputPair, ...], manifest: DatasetManifest, options: CompareOptions,
                    labels: np.ndarray | None, progress: CompareProgress | None) -> tuple[Measured, ...]:
    """Every output measured against its limits: as Ray tasks with --engine ray, by `--workers` processes where
    asked and the dataset has more than one batch, else here, output by output."""
    options.thresholds.check_outputs([p.name for p in pairs])
    check_topk(pairs, options)
    if options.scale.engine == "ray":
        return compare_outputs_on_ray(pairs, options.thresholds, options, labels, progress)
    if options.workers > 1 and manifest.file_count > 1:
        return compare_outputs_in_workers(pairs, options.thresholds, options, labels, progress)
    return tuple(compare_output(pair, options.thresholds, options, labels, progress) for pair in pairs)


def judge_outputs(contract: ModelContract, manifest: DatasetManifest, actual: Side, golden: Side,
                  options: CompareOptions, *, golden_source: str, cache_root: Path | None,
                  progress: CompareProgress | None, preprocessing: tuple[AippCheck, ...] | None,
                  actual_outputs: tuple[TensorSpec, ...] | None = None) -> CompareResult:
    """The comparison of two resolved run folders whose sides the caller checked (`refuse_same_backend`)."""
    actual_specs = actual_outputs or contract.model_outputs
    actual_dir, golden_dir = actual.outputs_folder, Path(golden.run_folder)
    labels = dataset_labels(options.labels, manifest, contract.outputs)
    if preprocessing is None:
        preprocessing = check_aipp(contract, manifest)
    actual_written = written_specs(actual_dir, actual_specs, manifest, what="--actual")
    pairs = _pairs(contract, manifest, actual_dir, golden_dir, actual_written=actual_written)
    measured = measure_outputs(pairs, manifest, options, labels, progress)
    outputs = tuple(m.result for m in measured)
    fp16_grid: tuple[str, ...] = ()
    if contract.converted is not None and contract.converted.target == "om":  # what the chip computed in
        fp16_grid = outputs_on_fp16_grid(actual_dir, actual_written, manifest)
    constant = with_inputs_same(tuple(m.constant for m in measured if m.constant is not None), manifest)
    expected: tuple[ExpectedError, ...] = ()
    if wants_expected(contract, options):
        expected = _expected_errors(contract, manifest, golden_dir, options, outputs, cache_root, progress, actual)
    thresholds = options.thresholds
    names = [o.name for o in outputs]
    provenance = make_provenance(contract, manifest, golden, actual, {n: thresholds.limits(n) for n in names},
                                 {n: thresholds.sample_limits(n) for n in names})
    return CompareResult(
        contract=str(contract.path), dataset=str(manifest.root), actual_dir=actual.run_folder,
        golden_dir=str(golden_dir), golden_source=golden_source, samples=manifest.samples,
        padding=manifest.padding, outputs=outputs, provenance=provenance,
        per_sample_asked=thresholds.per_sample_asked, expected=expected,
        expected_asked=bool(expected) and fails_on_expected(contract, options),
        preprocessing=preprocessing, random_ops=dict(contract.random_ops), fp16_grid=fp16_grid,
        constant_outputs=constant,
    )


def _expected_errors(contract: ModelContract, manifest: DatasetManifest, golden_dir: Path, options: CompareOptions,
                     outputs: tuple[OutputResult, ...], cache_root: Path | None,
                     progress: CompareProgress | None, actual: Side) -> tuple[ExpectedError, ...]:
    """Each output's error against the emulated precision's: the stand-in's run of the same precision mode over
    the same bins, compared with the same golden outputs. Where the actual side is that very model run by ONNX
    Runtime (a stand-in conversion: the emulation converts the pb as convert did, to the same bytes), its run and
    its measure are the emulation's: neither is made a second time."""
    def emulated_progress(done: int, total: int) -> None:
        if progress is not None:
            progress("emulated", done, total)

    root = cache_root or contract.folder / CACHE_FOLDER
    staged, _ = emulated_model(contract, manifest, root)
    if (actual.recorded and actual.backend == "onnxrt" and staged.converted is not None
            and actual.model_sha256 == staged.converted.sha256):
        emulated = outputs
    else:
        staged, emulated_dir = emulated_run(contract, manifest, root, emulated_progress)
        quiet = replace(options, labels=None, workers=1, scale=ScaleOptions())
        pairs = _pairs(staged, manifest, emulated_dir, golden_dir, what="emulated")
        emulated = tuple(m.result for m in measure_outputs(pairs, manifest, quiet, None, None))
    precision = contract.converted.precision_mode if contract.converted is not None else ""
    return tuple(expected_error(a.name, precision, a.metrics, e.metrics, options.expected_factor)
                 for a, e in zip(outputs, emulated, strict=True))
