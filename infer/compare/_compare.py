"""`infer compare`: the converted model's outputs against TensorFlow's, streamed batch by batch.

The two passes over each output's batches and their fold are `infer.compare._passes`: here they run in this process
over one shard of every batch, under `--workers N` in N processes, with equal results.
Each batch file is memory-mapped, so memory holds a few batches, never the dataset.
"""
from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from binio.dataset import digests_checked_beside
from binio.errors import InferError
from binio.manifest import DatasetManifest, dataset_folder, load_manifest
from binio.spec import TensorSpec
from infer.aipp.config import model_aipp
from infer.compare._aipp_check import AippCheck, check_aipp
from infer.compare._constant_outputs import constant_outputs
from infer.compare._expected import (
    FP32_MODES,
    ExpectedError,
    check_emulation_possible,
    emulated_run,
    expected_error,
    stand_in_available,
)
from infer.compare._fp16_grid import outputs_on_fp16_grid
from infer.compare._golden import CACHE_FOLDER, tensorflow_golden
from infer.compare._labels import labels_for_samples
from infer.compare._layerwise import check_layerwise, compare_layers
from infer.compare._npu_layers import check_npu_dump, compare_npu_layers
from infer.compare._passes import check_topk, compare_outputs_in_workers, measure_output
from infer.compare._provenance import (
    Side,
    make_provenance,
    refuse_same_backend,
    run_side,
    sample_names,
    tensorflow_side,
)
from infer.compare._reports import output_folder
from infer.compare._sources import OutputPair, check_run_folder, output_pairs, resolve_run_folder, written_specs
from infer.compare._tool_outputs import ActualFolder, actual_outputs
from infer.compare._topk import is_classifier
from infer.compare.options import CompareOptions, CompareProgress
from infer.compare.result import CompareResult, OutputResult
from infer.compare.thresholds import Thresholds
from infer.contract import ModelContract, as_contract
from infer.gear_check import check_dataset_gear
from infer.om import check_om_bins, with_om_descriptors

log = logging.getLogger(__name__)


def compare_output(pair: OutputPair, thresholds: Thresholds, options: CompareOptions,
                   labels: np.ndarray | None, progress: CompareProgress | None = None) -> OutputResult:
    """One output over the whole dataset, in two streaming passes: the one shard of every stem, in this process."""
    on_batch = None
    if progress is not None:
        total, done = 2 * pair.manifest.file_count, [0]
        progress(pair.name, 0, total)

        def on_batch() -> None:
            done[0] += 1
            progress(pair.name, done[0], total)

    return measure_output(pair, thresholds, options, labels, [frozenset(pair.manifest.stems)], on_batch=on_batch)


def dataset_labels(path: Path | None, manifest: DatasetManifest, outputs: Sequence[TensorSpec]) -> np.ndarray | None:
    """The labels file's classes, one per sample of the dataset (padding excluded), each a class index of the
    model's classifier outputs (0-based); None without a file. A file of ``name label`` lines is matched to the
    samples by name (`infer.compare._labels`), a file of bare labels by position."""
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


def _measure(pairs: tuple[OutputPair, ...], manifest: DatasetManifest, options: CompareOptions,
             labels: np.ndarray | None, progress: CompareProgress | None) -> tuple[OutputResult, ...]:
    options.thresholds.check_outputs([p.name for p in pairs])
    check_topk(pairs, options)
    if options.workers > 1 and manifest.file_count > 1:
        return compare_outputs_in_workers(pairs, options.thresholds, options, labels)
    return tuple(compare_output(pair, options.thresholds, options, labels, progress) for pair in pairs)


def _expected_by_default(contract: ModelContract) -> bool:
    """The band is computed, and fails the run, unless told otherwise: for an om (the stand-in beside it emulates
    what the chip was asked to compute) and for an fp32 conversion (whose error float32 rounding alone explains),
    where the stand-in is at hand. The fp16 modes keep msit's rule alone by default: their band is a diagnosis."""
    converted = contract.converted
    if converted is None or not stand_in_available():
        return False
    return converted.target == "om" or converted.precision_mode in FP32_MODES


def _wants_expected(contract: ModelContract, options: CompareOptions) -> bool:
    if options.fail_on_expected or options.expected_from_emulation:
        return True
    if options.expected_from_emulation is None:
        return _expected_by_default(contract)
    return False


def _fails_on_expected(contract: ModelContract, options: CompareOptions) -> bool:
    if options.fail_on_expected is not None:
        return options.fail_on_expected
    return options.expected_from_emulation is not False and _expected_by_default(contract)


def compare_run_folders(contract: ModelContract, manifest: DatasetManifest, actual_dir: Path, golden_dir: Path,
                        options: CompareOptions, *, golden_source: str = "given",
                        cache_root: Path | None = None, progress: CompareProgress | None = None,
                        preprocessing: tuple[AippCheck, ...] | None = None,
                        actual_side: Side | None = None,
                        actual_outputs: tuple[TensorSpec, ...] | None = None) -> CompareResult:
    """Both sides already on disk in msame's layout: the converted model's outputs and TensorFlow's.

    `preprocessing` is the AIPP check of this contract's AIPP config on `manifest` when the caller has it already
    (tune-precision compares many candidates that share both); None to make it here. `actual_side` is who wrote
    `actual_dir` when the caller read that already (a tool's own folder, staged in infer's layout), and
    `actual_outputs` the shapes that folder holds where they are not the contract's (a model with gears: the
    dataset's gear's)."""
    if actual_side is None:
        actual_dir = resolve_run_folder(actual_dir, what="--actual")
    golden_dir = resolve_run_folder(golden_dir, what="--golden")
    actual = actual_side or run_side(contract, actual_dir, "actual")
    golden = run_side(contract, golden_dir, "golden")
    if golden_source != "given":
        golden = tensorflow_side(contract, golden_dir)
    if not options.allow_same_backend:
        refuse_same_backend(contract, actual, golden)
    return _compare_sides(contract, manifest, actual, golden, options, golden_source=golden_source,
                          cache_root=cache_root, progress=progress, preprocessing=preprocessing,
                          actual_outputs=actual_outputs)


def _compare_sides(contract: ModelContract, manifest: DatasetManifest, actual: Side, golden: Side,
                   options: CompareOptions, *, golden_source: str, cache_root: Path | None,
                   progress: CompareProgress | None, preprocessing: tuple[AippCheck, ...] | None,
                   actual_outputs: tuple[TensorSpec, ...] | None = None) -> CompareResult:
    """The comparison of two resolved run folders whose sides were checked (`refuse_same_backend`)."""
    actual_specs = actual_outputs or contract.model_outputs
    actual_dir, golden_dir = actual.outputs_folder, Path(golden.run_folder)
    labels = dataset_labels(options.labels, manifest, contract.outputs)
    if preprocessing is None:
        preprocessing = check_aipp(contract, manifest)
    actual_written = written_specs(actual_dir, actual_specs, manifest, what="--actual")
    pairs = _pairs(contract, manifest, actual_dir, golden_dir, actual_written=actual_written)
    outputs = _measure(pairs, manifest, options, labels, progress)
    fp16_grid: tuple[str, ...] = ()
    if contract.converted is not None and contract.converted.target == "om":  # what the chip computed in
        fp16_grid = outputs_on_fp16_grid(actual_dir, actual_written, manifest)
    constant = constant_outputs(pairs, manifest)
    expected: tuple[ExpectedError, ...] = ()
    if _wants_expected(contract, options):
        expected = _expected_errors(contract, manifest, golden_dir, options, outputs, cache_root, progress)
    thresholds = options.thresholds
    names = [o.name for o in outputs]
    provenance = make_provenance(contract, manifest, golden, actual, {n: thresholds.limits(n) for n in names},
                                 {n: thresholds.sample_limits(n) for n in names})
    return CompareResult(
        contract=str(contract.path), dataset=str(manifest.root), actual_dir=actual.run_folder,
        golden_dir=str(golden_dir), golden_source=golden_source, samples=manifest.samples,
        padding=manifest.padding, outputs=outputs, provenance=provenance,
        per_sample_asked=thresholds.per_sample_asked, expected=expected,
        expected_asked=bool(expected) and _fails_on_expected(contract, options),
        preprocessing=preprocessing, random_ops=dict(contract.random_ops), fp16_grid=fp16_grid,
        constant_outputs=constant,
    )


def _expected_errors(contract: ModelContract, manifest: DatasetManifest, golden_dir: Path, options: CompareOptions,
                     outputs: tuple[OutputResult, ...], cache_root: Path | None,
                     progress: CompareProgress | None) -> tuple[ExpectedError, ...]:
    """Each output's error against the emulated precision's: the stand-in's run of the same precision mode over
    the same bins, compared with the same golden outputs."""
    def emulated_progress(done: int, total: int) -> None:
        if progress is not None:
            progress("emulated", done, total)

    staged, emulated_dir = emulated_run(contract, manifest, cache_root or contract.folder / CACHE_FOLDER,
                                        emulated_progress)
    quiet = replace(options, labels=None, workers=1)
    emulated = _measure(_pairs(staged, manifest, emulated_dir, golden_dir, what="emulated"), manifest, quiet, None,
                        None)
    precision = contract.converted.precision_mode if contract.converted is not None else ""
    return tuple(expected_error(a.name, precision, a.metrics, e.metrics, options.expected_factor)
                 for a, e in zip(outputs, emulated, strict=True))


def compare(model: ModelContract | Path | str, dataset: DatasetManifest | Path | str, actual: Path | str, *,
            golden: Path | None = None,
            options: CompareOptions | None = None, dump_golden: Path | None = None,
            cache_root: Path | None = None, on_golden_run: Callable[[], None] | None = None,
            progress: CompareProgress | None = None, force: bool = False) -> CompareResult:
    """The whole command: find or make the golden outputs, compare, and (optionally) go layer by layer.
    `on_golden_run` hears when TensorFlow is about to compute the golden outputs (not when they are cached);
    `progress` how far the golden run and the reading of each output's batches are. `dump_golden` is a folder
    like any other output: locked while written, and one holding anything is written into only with `force`."""
    options = options or CompareOptions()
    with contextlib.ExitStack() as held:
        if dump_golden is not None:
            held.enter_context(output_folder(dump_golden, option="--dump-golden", force=force,
                                             hint="pass --force to write into it"))
        return _compare_whole(model, dataset, actual, golden, options, dump_golden, cache_root,
                              on_golden_run, progress)


def _compare_whole(model: ModelContract | Path | str, dataset: DatasetManifest | Path | str, actual: Path | str,
                   golden: Path | None, options: CompareOptions, dump_golden: Path | None,
                   cache_root: Path | None, on_golden_run: Callable[[], None] | None,
                   progress: CompareProgress | None) -> CompareResult:
    # An om's outputs are read, and its bins checked, by the om's own descriptors.
    contract, actual = with_om_descriptors(as_contract(model)), Path(actual)
    # A SavedModel's signature keys name its outputs in --threshold too (note:cosine=0.999).
    options = replace(options, thresholds=options.thresholds.naming_tensors(
        contract.signature_keys, [s.name for s in contract.outputs]))
    manifest = load_manifest(dataset_folder(dataset))
    check_om_bins(manifest, contract)  # bins the om could not have taken: its outputs are not theirs
    check_dataset_gear(manifest, contract.gears)  # the stand-in's too: it is held to the om's gears
    # The bins both runs read: one changed since dump-bin (same size, other bytes) makes the outputs describe
    # another dataset than the one named. Hashed beside the comparison. A tool's own folder is staged in infer's
    # layout for as long as the comparison reads it.
    with digests_checked_beside(manifest) as bins_unchanged, actual_outputs(contract, manifest, actual) as found:
        result = _compare(contract, manifest, found, golden, options, dump_golden, cache_root,
                          on_golden_run, progress)
        bins_unchanged()
    return result


def _compare(contract: ModelContract, manifest: DatasetManifest, actual: ActualFolder, golden: Path | None,
             options: CompareOptions, dump_golden: Path | None, cache_root: Path | None,
             on_golden_run: Callable[[], None] | None, progress: CompareProgress | None) -> CompareResult:
    layerwise = options.layerwise or options.npu_dump is not None  # a dump is compared layer by layer
    if (layerwise or dump_golden is not None) and model_aipp(contract) is not None:
        raise InferError(f"--layerwise/--dump-golden: {contract.path} was converted with AIPP, whose uint8 bins "
                         "the layer-by-layer runs do not feed yet", hint="convert a copy without --aipp for it")
    if options.fail_on_expected or options.expected_from_emulation:
        check_emulation_possible(contract)
    if golden is not None:
        result = compare_run_folders(contract, manifest, actual.folder, Path(golden), options, cache_root=cache_root,
                                     progress=progress, actual_side=actual.side, actual_outputs=actual.outputs)
    else:
        # What the user named is checked before TensorFlow runs (seconds to minutes) rather than after it.
        check_run_folder(actual.folder, actual.outputs, manifest, what="--actual")
        if layerwise:
            (check_layerwise if options.npu_dump is None else check_npu_dump)(contract)
        actual_side = actual.side
        if not options.allow_same_backend:
            refuse_same_backend(contract, actual_side, tensorflow_side(contract))
        options.thresholds.check_outputs([s.name for s in contract.outputs])
        dataset_labels(options.labels, manifest, contract.outputs)

        def golden_progress(done: int, total: int) -> None:
            if progress is not None:
                progress("golden", done, total)

        golden_dir, source = tensorflow_golden(contract, manifest, cache_root=cache_root, on_run=on_golden_run,
                                               workers=options.workers, progress=golden_progress,
                                               allow_host_ops=options.allow_host_ops)
        # The sides were resolved and checked above, before TensorFlow ran: not again.
        result = _compare_sides(contract, manifest, actual_side, tensorflow_side(contract, golden_dir), options,
                                golden_source=source, cache_root=cache_root, progress=progress, preprocessing=None,
                                actual_outputs=actual.outputs)
    # Each tensor is judged against its expected-error band where the stand-in can emulate the conversion.
    bands_from = (cache_root or contract.folder / CACHE_FOLDER) if stand_in_available() else None
    if options.npu_dump is not None:
        layers = compare_npu_layers(contract, manifest, options.thresholds, options.npu_dump, atol=options.atol,
                                    rtol=options.rtol, dump_golden=dump_golden, outcome=result,
                                    bands_from=bands_from, factor=options.expected_factor)
        result = replace(result, layerwise=layers, dumped_golden=str(dump_golden) if dump_golden is not None else "")
    elif layerwise or dump_golden is not None:
        layers = compare_layers(contract, manifest, options.thresholds, atol=options.atol, rtol=options.rtol,
                                with_converted=layerwise, dump_golden=dump_golden, outcome=result,
                                bands_from=bands_from, factor=options.expected_factor)
        result = replace(result, layerwise=layers if layerwise else None,
                         dumped_golden=str(dump_golden) if dump_golden is not None else "")
    return result
