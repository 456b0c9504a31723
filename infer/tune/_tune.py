"""`infer tune-precision`: a small set of ops to keep in fp32 so that compare passes, found on the stand-in, handed
over as ATC's keep_dtype file.

Every candidate is a real stand-in conversion with a keep_dtype file (`infer.tune._trial`), run over the bins and
compared with TensorFlow under compare's thresholds; the search over candidates is `infer.tune._search`, seeded with
what `compare --layerwise` points at (`infer.tune._suspects`). On `--samples N` the search runs on the first batches
holding N samples and the set found is checked on the whole dataset.
"""

from __future__ import annotations

import logging
import math
import shutil
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from atc_wrap.atc.soc import check_soc_version
from atc_wrap.precision.op_controls import write_keep_dtype
from atc_wrap.standin.converter_names import read_type_named
from atc_wrap.standin.emulation import tf_origin
from atc_wrap.standin.merged_twins import tf_twins
from binio.atomic import write_bytes_atomic, write_json_atomic
from binio.lock import folder_lock
from binio.manifest import DatasetManifest, dataset_folder, load_manifest
from binio.output import check_no_links_out, check_output
from binio.process import quote_command
from binio.shards import write_view
from infer.compare import LayerwiseError, check_output_folder, compare_layers, resolve_run_folder, tensorflow_golden
from infer.compare.options import CompareOptions
from infer.compare.result import CompareResult
from infer.contract import ModelContract, as_contract, load_contract
from infer.convert import ConvertOptions, convert_model
from infer.tune._ops import TunableOp, keepable, tunable_ops
from infer.tune._search import search
from infer.tune._suspects import Suspect, layer_suspects
from infer.tune._trial import KEEP_DTYPE_FILE, Candidate, Dataset, Trials, replayed_settings
from infer.tune.options import DEFAULT_SOC, TuneOptions
from infer.tune.result import TuneResult

log = logging.getLogger(__name__)

TUNE_JSON = "tune.json"
ATC_COMMAND_FILE = "atc_command.txt"
MODEL_FOLDER = "model"
_WORK = ".tune-work"
# Hears what the tuning is doing: a stage line ("golden outputs: TensorFlow") or a candidate's verdict.
TuneProgress = Callable[[str], None]


def _subset(manifest: DatasetManifest, samples: int | None, work: Path) -> DatasetManifest | None:
    """The first batches holding `samples` samples as a dataset of their own, or None for the whole dataset."""
    if samples is None or samples >= manifest.samples:
        return None
    count = max(1, math.ceil(samples / manifest.batch))
    return write_view(manifest, manifest.stems[:count], work / "subset")


def _golden(contract: ModelContract, manifest: DatasetManifest, work: Path, given: Path | None,
            allow_host_ops: bool) -> Path:
    if given is not None:
        return resolve_run_folder(given, what="--golden")
    return tensorflow_golden(contract, manifest, cache_root=work / "cache", allow_host_ops=allow_host_ops)[0]


def _suspects(staged: ModelContract, model: Any, manifest: DatasetManifest, options: TuneOptions,
              tunable: tuple[TunableOp, ...], outcome: CompareResult | None) -> tuple[Suspect, ...]:
    """The layer-by-layer suspects on the batch `outcome` (the baseline's comparison) picks, each named by the
    tunable op that makes its tensor in the stand-in `model` (`staged`'s ONNX; a TF Identity's tensor is made by
    the op before it there)."""
    try:
        layers = compare_layers(staged, manifest, options.thresholds, atol=options.atol, rtol=options.rtol,
                                outcome=outcome)
    except LayerwiseError as exc:  # no seeds: the search still runs, over every op
        log.warning("no layer-by-layer seeds: %s", exc.message)
        return ()
    names = {op.name for op in tunable}
    makers = {out: node.name for node in model.graph.node for out in node.output}
    type_named = read_type_named(model)
    found: dict[str, Suspect] = {}
    for suspect in layer_suspects(layers):
        op = suspect.op if suspect.op in names else tf_origin(makers.get(suspect.tensor, ""), names, type_named)
        if op is not None and op not in found:
            found[op] = replace(suspect, op=op)
    return tuple(found.values())


def _load_onnx(contract: ModelContract) -> Any:
    """The stand-in's ONNX model, read once for the tunable ops and the seeds."""
    import onnx

    path = contract.converted_path
    assert path is not None
    return onnx.load(str(path))


def _onnx_node_names(model: Any) -> set[str]:
    """The stand-in's node names but those tf2onnx named after their op type (no TF node of theirs)."""
    return {node.name for node in model.graph.node} - read_type_named(model)


def _remove(path: Path) -> None:
    """Removes an earlier run's folder; a link is removed itself, never followed."""
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path)


def _check_output(out: Path, force: bool) -> None:
    if check_output(out / TUNE_JSON, force=force, hint="pass --force to replace it, or choose another -o",
                    what="an earlier tune-precision"):
        check_no_links_out(out)  # --force replaces the earlier result: never through a link out of -o


def tuned_chip(contract: ModelContract, options: TuneOptions) -> str:
    """The chip the candidates are planned for: --soc-version, else the one the contract was converted for (an
    om's, or the stand-in's given or assumed chip), else the stand-in's assumed one."""
    converted = contract.converted
    if options.soc_version:
        return options.soc_version
    if converted is not None and converted.soc_version:
        return converted.soc_version
    plan = converted.plan() if converted is not None else None
    return plan.chip if plan is not None else DEFAULT_SOC


def _atc_command(contract: ModelContract, options: TuneOptions, keep: Path) -> tuple[str, ...]:
    """What `infer convert --target om --keep-dtype KEEP` runs on an Ascend machine (its dry run)."""
    soc = tuned_chip(contract, options)
    dry = convert_model(contract, ConvertOptions(
        target="om", dry_run=True, soc_version=soc, precision_mode=options.precision_mode, keep_dtype=keep,
        **replayed_settings(contract, keep.parent / MODEL_FOLDER)))
    return dry.command


def tune_precision(model: ModelContract | Path | str, bins: DatasetManifest | Path | str, out: Path | str,
                   options: TuneOptions | None = None, *,
                   progress: TuneProgress | None = None,
                   on_candidate: Callable[[Candidate], None] | None = None) -> TuneResult:
    """Searches a keep_dtype set for `model` over `bins`; writes keep_dtype.cfg, tune.json, the converted model
    and the ATC command into `out`."""
    options = options or TuneOptions()
    start = time.monotonic()

    def say(line: str) -> None:
        if progress is not None:
            progress(line)

    contract = as_contract(model)
    contract.check_pb_unchanged()
    options.thresholds.check_outputs([spec.name for spec in contract.outputs])
    if options.soc_version:
        check_soc_version(options.soc_version)
    manifest = load_manifest(dataset_folder(bins))
    out = Path(out)
    check_output_folder(out, "-o")
    # One tune per -o at a time: a second one would clear the first's work folder under it.
    with folder_lock(out, command="tune-precision"):
        _check_output(out, options.force)
        work = out / _WORK
        _remove(work)
        work.mkdir(parents=True)
        try:
            return _tune(contract, manifest, out, work, options, start, say, on_candidate)
        finally:
            shutil.rmtree(work, ignore_errors=True)


def _tune(contract: ModelContract, manifest: DatasetManifest, out: Path, work: Path, options: TuneOptions,
          start: float, say: Callable[[str], None], on_candidate: Callable[[Candidate], None] | None) -> TuneResult:
    say("golden outputs: TensorFlow on the frozen pb" if options.golden is None else "golden outputs: --golden")
    whole = Dataset("whole", manifest, _golden(contract, manifest, work, options.golden, options.allow_host_ops))
    subset_manifest = _subset(manifest, options.samples, work) if options.golden is None else None
    if options.golden is not None and options.samples is not None:
        say("--samples is not used with --golden: every candidate runs on the whole dataset")
    search_on = whole if subset_manifest is None else Dataset(
        "subset", subset_manifest, _golden(contract, subset_manifest, work, None, options.allow_host_ops))
    compare_options = CompareOptions(thresholds=options.thresholds, atol=options.atol, rtol=options.rtol)
    chip = tuned_chip(contract, options)
    trials = Trials(contract, options.precision_mode, work, compare_options, on_candidate, soc_version=chip,
                    allow_host_ops=options.allow_host_ops)

    before = trials.evaluate((), "baseline", whole)
    baseline = _converted_contract(trials)
    baseline_onnx = _load_onnx(baseline)
    plan = baseline.converted.plan() if baseline.converted is not None else None
    tunable, unkeepable = keepable(tunable_ops(contract, _onnx_node_names(baseline_onnx)), plan)
    names = tuple(op.name for op in tunable)
    type_named = read_type_named(baseline_onnx)
    twins = tf_twins(baseline_onnx, lambda node: tf_origin(node, set(names), type_named))
    if unkeepable:
        say(f"left out of the search: {_ops(len(unkeepable))} in fp16 that {chip} cannot keep in fp32 (no fp32 "
            "kernel): "
            + ", ".join(f"{op.name} ({op.op_type})" for op in unkeepable[:6]) + (" ..." if len(unkeepable) > 6 else ""))
    result_args: dict[str, Any] = dict(tunable=tunable, before=before, mode=options.mode,
                                       precision_mode=options.precision_mode, output=out, chip=chip,
                                       unkeepable=unkeepable, twins={name: twins[name] for name in names
                                                                     if name in twins})
    if before.passed:
        say(f"{options.precision_mode} passes already: nothing to keep in fp32")
        converted = contract.converted
        if converted is not None and converted.precision_mode != options.precision_mode:
            # The user may have come here because compare failed on that model: it is not what was tuned.
            say(f"(model.json's converted {Path(converted.path).name} was made with {converted.precision_mode}, "
                f"not {options.precision_mode}: convert it with {options.precision_mode} to use it as it is)")
        return _finish(trials, out, options, start, result_args, (), (), before, contract, 0)
    suspects: tuple[Suspect, ...] = ()
    if options.seeds:
        say(f"layer by layer ({len(tunable)} ops the keep_dtype file can name): looking for the first diverging ops")
        suspects = _suspects(baseline, baseline_onnx, whole.manifest, options, tunable, trials.baseline)
    if suspects:
        say("seeds: " + ", ".join(f"{s.op} ({s.why})" for s in suspects))

    def passes(ops: tuple[str, ...], stage: str, dataset: Dataset = search_on) -> bool:
        return trials.evaluate(ops, stage, dataset).passed

    outcome = search(names, [s.op for s in suspects], passes, options.mode)
    found = outcome.found
    if found is not None and search_on is not whole and not passes(found, "final", whole):
        say("the set found on the subset fails on the whole dataset: searching again on the whole dataset")
        outcome = search(names, list(found), lambda ops, stage: passes(ops, stage, whole), options.mode)
        found = outcome.found
    if found is None and unkeepable:
        reason = (f"no set of fp32 ops passes: even with all {_ops(len(names))} {chip} can keep in fp32 kept so, "
                  f"compare fails, and {_ops(len(unkeepable))} in fp16 {'has' if len(unkeepable) == 1 else 'have'} "
                  "no fp32 kernel there ("
                  + ", ".join(f"{op.name} ({op.op_type})" for op in unkeepable[:6])
                  + "): a chip with fp32 kernels for them (--soc-version), or a rewrite of the model")
        return _finish(trials, out, options, start, result_args, (), tuple(suspects), None, contract,
                       len(outcome.grown), reason=reason)
    if found is None:
        reason = (f"no set of fp32 ops passes: even with every one of the {len(names)} float ops kept in fp32 "
                  "compare fails, so the failure is not fp16's (look for a damaged weight, a wrong input or a "
                  "conversion error: compare --layerwise)")
        return _finish(trials, out, options, start, result_args, (), tuple(suspects), None, contract,
                       len(outcome.grown), reason=reason)
    after = trials.evaluate(found, "final", whole)
    reason = ""
    if options.max_ops is not None and len(found) > options.max_ops:
        reason = f"the smallest set found keeps {len(found)} ops in fp32, more than --max-ops {options.max_ops}"
    return _finish(trials, out, options, start, result_args, found, tuple(suspects), after, contract,
                   len(outcome.grown), reason=reason)


def _ops(count: int) -> str:
    return f"{count} op" if count == 1 else f"{count} ops"


def _converted_contract(trials: Trials) -> ModelContract:
    """The work copy as its last conversion left it."""
    return load_contract(trials.staged.path)


def _finish(trials: Trials, out: Path, options: TuneOptions, start: float, args: dict[str, Any],
            found: tuple[str, ...], suspects: tuple[Suspect, ...], after: Candidate | None,
            contract: ModelContract, grown: int, *, reason: str = "") -> TuneResult:
    """Writes keep_dtype.cfg, the converted model and the ATC command (when a set was found) and tune.json."""
    by_name = {op.name: op for op in args["tunable"]}
    chosen = tuple(by_name[name] for name in found)
    command: tuple[str, ...] = ()
    ok = after is not None and after.passed and not reason
    if ok:
        # Every TF twin of a kept op: the stand-in computes them as one node, ATC converts each.
        written = tuple(dict.fromkeys(n for name in found for n in (name, *args["twins"].get(name, ()))))
        keep = write_keep_dtype(out / KEEP_DTYPE_FILE, written).absolute()
        model_folder = out / MODEL_FOLDER
        _remove(model_folder)
        trials.convert(written, model_folder)
        command = _atc_command(contract, options, keep)
        write_bytes_atomic(out / ATC_COMMAND_FILE, (quote_command(command) + "\n").encode())
    result = TuneResult(found=ok, reason=reason if not ok else "", ops=chosen, suspects=suspects, after=after,
                        candidates=tuple(trials.tried), seconds=time.monotonic() - start, atc_command=command,
                        grown=grown, **args)
    write_json_atomic(out / TUNE_JSON, result.to_json())
    return result
