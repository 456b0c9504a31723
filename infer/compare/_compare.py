"""`infer compare`: the converted model's outputs against TensorFlow's, streamed batch by batch.

The stage's outline; each step lives in a room of its own:
1. what cannot be compared is refused before anything runs (the om's bins and gears, AIPP with --layerwise, a band
   that cannot be had, the sides themselves);
2. the two sides are read (`infer.compare._sides`): --actual as infer or an Ascend tool left it, --golden as given
   or TensorFlow's run of the frozen pb, made once and cached;
3. the outputs are judged (`infer.compare._judge`): msaccucmp's metrics over every batch, msit's limits, the
   expected-error band, and what makes the verdict say less than it seems;
4. with --layerwise, layer by layer on one batch: against the ONNX stand-in (`infer.compare._layers`) or an NPU's
   dump (`infer.compare._npu`).
The reports are written from the result by the caller (`infer.compare._reports.folder`); `--dump-golden`'s folder is
held here from before the comparison runs until it is written.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from binio.dataset import digests_checked_beside
from binio.errors import InferError
from binio.manifest import DatasetManifest, dataset_folder, load_manifest
from binio.spec import TensorSpec
from infer.compare._judge.aipp_check import AippCheck
from infer.compare._judge.expected import check_emulation_possible, stand_in_available
from infer.compare._judge.outputs import dataset_labels, judge_outputs
from infer.compare._layers.stand_in import check_layerwise, compare_layers
from infer.compare._npu.layers import check_npu_dump, compare_npu_layers
from infer.compare._reports.folder import output_folder
from infer.compare._sides.golden import CACHE_FOLDER, tensorflow_golden
from infer.compare._sides.provenance import Side, refuse_same_backend, run_side, tensorflow_side
from infer.compare._sides.run_folders import check_run_folder, resolve_run_folder
from infer.compare._sides.tool_outputs import ActualFolder, actual_outputs
from infer.compare.options import CompareOptions, CompareProgress
from infer.compare.result import CompareResult
from infer.contract import ModelContract, as_contract
from infer.gear_check import check_dataset_gear
from infer.model_aipp.config import model_aipp
from infer.model_om import check_om_bins, with_om_descriptors


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
    return judge_outputs(contract, manifest, actual, golden, options, golden_source=golden_source,
                         cache_root=cache_root, progress=progress, preprocessing=preprocessing,
                         actual_outputs=actual_outputs)


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
        result = judge_outputs(contract, manifest, actual_side, tensorflow_side(contract, golden_dir), options,
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
