"""The outputs judged: both sides' outputs paired, each measured over the whole dataset (in this process or in
`--workers` processes: `infer.compare._judge.passes`), the expected-error band beside msit's limits, the checks that
make the verdict say less than it seems (AIPP, constant outputs, the fp16 grid), and the provenance: one
`CompareResult`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from binio.errors import InferError
from binio.manifest import DatasetManifest
from binio.spec import TensorSpec
from infer.compare._judge.aipp_check import AippCheck, check_aipp
from infer.compare._judge.constant_outputs import constant_output, with_inputs_same
from infer.compare._judge.expected import (
    FP32_MODES,
    ExpectedError,
    emulated_model,
    emulated_run,
    expected_error,
    fails_on_expected,
    stand_in_available,
    wants_expected,
)
from infer.compare._judge.fp16_grid import outputs_on_fp16_grid
from infer.compare._judge.fp16_trouble import fp16_troubles
from infer.compare._judge.kl_band import fails_on_kl_alone, kl_band, rounding_kl
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
from infer.compare._sides.set_outputs import SetOutput, set_outputs
from infer.compare.options import CompareOptions, CompareProgress
from infer.compare.result import CompareResult, OutputResult
from infer.compare.thresholds import Thresholds
from infer.contract import ModelContract
from infer.run.options import ScaleOptions

log = logging.getLogger(__name__)


def compare_output(pair: OutputPair, thresholds: Thresholds, options: CompareOptions,
                   labels: np.ndarray | None, progress: CompareProgress | None = None, *,
                   fp16: bool = False) -> Measured:
    """One output over the whole dataset, in two streaming passes: the one shard of every stem, in this process.
    `fp16`: the converted model computes in fp16 (its constant outputs are judged at fp16's resolution)."""
    return measure_output(pair, thresholds, options, labels, [pair.manifest.stems],
                          on_batch=batch_counter(pair, progress), fp16=fp16)


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
           what: str = "--actual", actual_written: tuple[TensorSpec, ...] | None = None,
           sets: Mapping[str, SetOutput] | None = None) -> tuple[OutputPair, ...]:
    """Each output's two sides, as the run folders wrote them (`actual_written`: the actual side's, where the
    caller read them already); `sets`: the outputs compared as sets."""
    if actual_written is None:
        actual_written = written_specs(actual_dir, contract.model_outputs, manifest, what=what)
    return output_pairs(actual_written, written_specs(golden_dir, contract.outputs, manifest, what="--golden"),
                        actual_dir, golden_dir, manifest, sets)


def measure_outputs(pairs: tuple[OutputPair, ...], manifest: DatasetManifest, options: CompareOptions,
                    labels: np.ndarray | None, progress: CompareProgress | None, *,
                    fp16: bool = False) -> tuple[Measured, ...]:
    """Every output measured against its limits: as Ray tasks with --engine ray, by `--workers` processes where
    asked and the dataset has more than one batch, else here, output by output."""
    options.thresholds.check_outputs([p.name for p in pairs])
    check_topk(pairs, options)
    if options.scale.engine == "ray":
        return compare_outputs_on_ray(pairs, options.thresholds, options, labels, progress, fp16=fp16)
    if options.workers > 1 and manifest.file_count > 1:
        return compare_outputs_in_workers(pairs, options.thresholds, options, labels, progress, fp16=fp16)
    return tuple(compare_output(pair, options.thresholds, options, labels, progress, fp16=fp16) for pair in pairs)


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
    sets = set_outputs(contract.pb_path, (spec.name for spec in contract.outputs), options.set_outputs)
    pairs = _pairs(contract, manifest, actual_dir, golden_dir, actual_written=actual_written, sets=sets)
    in_fp16 = computes_in_fp16(contract)
    measured = measure_outputs(pairs, manifest, options, labels, progress, fp16=in_fp16)
    outputs = tuple(m.result for m in measured)
    as_measured = outputs  # before the KL judgement: the metrics an emulation identical to the actual side gives
    outputs = tuple(_kl_judged(output, pair, options) if in_fp16 else output
                    for output, pair in zip(outputs, pairs, strict=True))
    emulated = _Emulated(contract, manifest, golden_dir, options, cache_root, progress, sets,
                         actual=actual, actual_measured=as_measured)
    fp16_grid: tuple[str, ...] = ()
    if contract.converted is not None and contract.converted.target == "om":  # what the chip computed in
        fp16_grid = outputs_on_fp16_grid(actual_dir, actual_written, manifest)
    # watched in the measure's pass, an fp16 conversion's at fp16's resolution (constant_outputs' note)
    constant = with_inputs_same(tuple(m.constant for m in measured if m.constant is not None), manifest)
    troubles = fp16_troubles(
        contract.converted.precision_mode if contract.converted is not None else "", in_fp16,
        [(o.name, o.metrics) for o in outputs], constant,
        _fp32_constant(contract, manifest, golden_dir, cache_root, progress))
    expected: tuple[ExpectedError, ...] = ()
    if wants_expected(contract, options):
        precision = contract.converted.precision_mode if contract.converted is not None else ""
        expected = tuple(expected_error(a.name, precision, a.metrics, e.metrics, options.expected_factor)
                         for a, e in zip(outputs, emulated.outputs(), strict=True))
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
        constant_outputs=constant, fp16_trouble=troubles,
    )


def computes_in_fp16(contract: ModelContract) -> bool:
    """Whether the converted model computes in fp16 where it can (every mode but force_fp32 and
    must_keep_origin_dtype)."""
    return contract.converted is not None and contract.converted.precision_mode not in FP32_MODES


def _fp32_constant(contract: ModelContract, manifest: DatasetManifest, golden_dir: Path, cache_root: Path | None,
                   progress: CompareProgress | None) -> Callable[[str], bool | None]:
    """For an output that collapsed under fp16: whether it is the same for every sample in the stand-in's run of
    the same conversion in fp32 (made once, on first ask, and cached); None where that run cannot be made."""
    made: list[dict[str, bool] | None] = []

    def constant_in_fp32(name: str) -> bool | None:
        if not made:
            made.append(_fp32_constants(contract, manifest, golden_dir, cache_root, progress))
        found = made[0]
        return None if found is None else found.get(name)

    return constant_in_fp32


def _fp32_constants(contract: ModelContract, manifest: DatasetManifest, golden_dir: Path, cache_root: Path | None,
                    progress: CompareProgress | None) -> dict[str, bool] | None:
    if not stand_in_available():
        return None

    def fp32_progress(done: int, total: int) -> None:
        if progress is not None:
            progress("fp32", done, total)

    try:
        staged, run_dir = emulated_run(contract, manifest, cache_root or contract.folder / CACHE_FOLDER,
                                       fp32_progress, fp32=True)
    except InferError as exc:  # an op the chip cannot run in fp32, a model the stand-in cannot convert
        log.info("no fp32 run of the stand-in to compare the collapse with: %s", exc.message)
        return None
    pairs = _pairs(staged, manifest, run_dir, golden_dir, what="fp32")
    return {pair.name: bool((found := constant_output(pair)) is not None and found.actual) for pair in pairs}


class _Emulated:
    """The outputs of the stand-in's emulation of the same precision mode, measured against the same golden
    outputs: made on first ask (the band, a KL on a near-uniform output), once."""

    def __init__(self, contract: ModelContract, manifest: DatasetManifest, golden_dir: Path, options: CompareOptions,
                 cache_root: Path | None, progress: CompareProgress | None, sets: Mapping[str, SetOutput], *,
                 actual: Side | None = None, actual_measured: tuple[OutputResult, ...] = ()) -> None:
        self.contract, self.manifest, self.golden_dir, self.options = contract, manifest, golden_dir, options
        self.cache_root, self.progress, self.sets = cache_root, progress, sets
        self.actual, self.actual_measured = actual, actual_measured
        self._outputs: tuple[OutputResult, ...] | None = None

    def outputs(self) -> tuple[OutputResult, ...]:
        """Raises `ExpectedErrorUnavailable` where the emulation cannot be made (not converted, no stand-in)."""
        if self._outputs is None:
            self._outputs = self._measured()
        return self._outputs

    def _measured(self) -> tuple[OutputResult, ...]:
        def emulated_progress(done: int, total: int) -> None:
            if self.progress is not None:
                self.progress("emulated", done, total)

        root = self.cache_root or self.contract.folder / CACHE_FOLDER
        # Where the actual side is that very model run by ONNX Runtime (a stand-in conversion: the emulation converts
        # the pb as convert did, to the same bytes), its run and its measure are the emulation's: neither is made a
        # second time.
        actual = self.actual
        if actual is not None and actual.recorded and actual.backend == "onnxrt" and self.actual_measured:
            staged, _ = emulated_model(self.contract, self.manifest, root)
            if staged.converted is not None and actual.model_sha256 == staged.converted.sha256:
                return self.actual_measured
        staged, emulated_dir = emulated_run(self.contract, self.manifest, root, emulated_progress)
        quiet = replace(self.options, labels=None, workers=1, scale=ScaleOptions())
        return tuple(m.result for m in measure_outputs(
            _pairs(staged, self.manifest, emulated_dir, self.golden_dir, what="emulated", sets=self.sets),
            self.manifest, quiet, None, None))


def _kl_judged(output: OutputResult, pair: OutputPair, options: CompareOptions) -> OutputResult:
    """The output of an fp16 conversion with a KL failure on a near-uniform distribution set against fp16's
    rounding (`infer.compare._judge.kl_band`): dropped where the rounding explains it, explained where it does not."""
    if not fails_on_kl_alone(output.name, output.failures, output.metrics, options.thresholds):
        return output
    band = kl_band(output.metrics, rounding_kl(pair), output.failures[0].limit, options.expected_factor)
    return replace(output, kl_band=band, failures=() if band.within else output.failures)
