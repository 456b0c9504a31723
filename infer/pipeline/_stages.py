"""The six stages as the pipeline runs them: what each reads (for the skip check), with which settings, how to
run it through the library, and the `infer ...` command that does the same by hand.

Every stage calls the library function its command calls; nothing here starts `infer` as a subprocess. A stage's
library is imported when the stage runs (each `run_*`), not with this module: a re-run that skips every stage
decides so from the recorded digests and imports none of them (numpy aside), let alone a framework.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from binio.errors import InferError
from binio.spec import format_shape
from infer._option_fields import flag_args
from infer.contract import load_contract
from infer.pipeline._calls import atc_dry_run, compare, convert_options, freeze, precision_files
from infer.pipeline._work import Facts, StageDone, StagePlan, WorkLayout
from infer.pipeline.config import GENERATOR_PREFIXES, PipelineConfig
from infer.run.options import RunOptions

STAGES: tuple[str, ...] = ("inspect", "freeze", "convert", "dump-bin", "run", "compare")


def model_source_files(source: Path) -> tuple[Path, ...]:
    """The files a model source consists of: a checkpoint prefix's .index/.meta/.data-*, or the path itself."""
    if source.exists():
        return (source,)
    return tuple(sorted(source.parent.glob(source.name + ".*")))


def _freeze_args(config: PipelineConfig) -> list[str]:
    """[model] as `infer freeze`'s flags, from FreezeOptions' fields (`infer._option_fields`)."""
    return flag_args(config.model.freeze)


def _convert_args(config: PipelineConfig) -> list[str]:
    """[convert] as `infer convert`'s flags, from ConvertOptions' fields: --aipp with [data.preprocessing]'s
    normalisation, or --aipp-config with the file."""
    return flag_args(convert_options(config))


def _dump_args(config: PipelineConfig) -> list[str]:
    """[data] and [data.preprocessing] as `infer dump-bin`'s flags, from DumpOptions' fields."""
    return flag_args(config.data.dump)


def _run_args(config: PipelineConfig) -> list[str]:
    """[run] as `infer run`'s flags: [run] is RunOptions, each key the flag of its name, given when it differs
    from run's default; [remote] as --host and its flags."""
    return flag_args(run_options(config))


def _compare_args(config: PipelineConfig) -> list[str]:
    """[compare] as `infer compare`'s flags, from CompareOptions' fields."""
    return flag_args(config.compare)


# --- inspect ---------------------------------------------------------------------------------------------------

def plan_inspect(config: PipelineConfig, work: WorkLayout, facts: Facts) -> StagePlan:
    return StagePlan("inspect", model_source_files(config.model_source), {},
                     ("infer", "inspect", str(config.model_source)))


def run_inspect(config: PipelineConfig, work: WorkLayout, facts: Facts) -> StageDone:
    # on use: a stage's library, imported when the stage runs (this module's docstring)
    from ckpt2pb.inspection import inspect_model

    report = inspect_model(config.model_source)
    inputs = ", ".join(
        f"{p.tensor}{' (rank ?)' if p.shape is None else ' scalar' if not p.shape else format_shape(p.shape)}"
        f"{' with default' if p.has_default else ''}{' (a label)' if p.is_label else ''}" for p in report.placeholders)
    candidates = ", ".join(f"{c.signature_key} ({c.tensor})" if c.signature_key else c.tensor
                           for c in report.candidates[:3])
    weights = f"{report.parameters:,} parameters"
    if report.output_parameters is not None and report.output_parameters != report.parameters:
        weights = (f"{report.output_parameters:,} parameters (+{report.parameters - report.output_parameters:,} "
                   "only training reads)")
    summary = f"{report.kind}: inputs {inputs or 'none'}; likely outputs {candidates or 'none'}; {weights}"
    return StageDone(summary, (), {"candidates": [c.tensor for c in report.candidates[:5]]})


# --- freeze ----------------------------------------------------------------------------------------------------

def plan_freeze(config: PipelineConfig, work: WorkLayout, facts: Facts) -> StagePlan:
    settings = asdict(config.model) | {"source": str(config.model_source)}
    command = ("infer", "freeze", str(config.model_source), "-o", str(work.model_dir), *_freeze_args(config),
               "--force")
    return StagePlan("freeze", model_source_files(config.model_source), settings, command)


def run_freeze(config: PipelineConfig, work: WorkLayout, facts: Facts) -> StageDone:

    summary = freeze(config, work)
    return StageDone(summary, (work.pb,))


# --- convert ---------------------------------------------------------------------------------------------------

def plan_convert(config: PipelineConfig, work: WorkLayout, facts: Facts) -> StagePlan:

    command = ("infer", "convert", str(work.contract), *_convert_args(config))
    options = convert_options(config)  # AIPP made from [data.preprocessing] is in it
    settings = asdict(options)
    aipp_file = options.aipp.config if options.aipp is not None else None
    inputs: tuple[Path, ...] = (work.pb, aipp_file) if aipp_file is not None else (work.pb,)
    inputs += tuple(precision_files(config).values())  # an edited keep_dtype file re-runs the stage
    if options.use_om is not None:  # an om built elsewhere: a new one re-runs the stage
        inputs += (Path(options.use_om),)
    return StagePlan("convert", inputs, settings, command)


def run_convert(config: PipelineConfig, work: WorkLayout, facts: Facts) -> StageDone:
    # on use: a stage's library, imported when the stage runs (this module's docstring)
    from infer.convert import convert_model

    result = convert_model(load_contract(work.contract), convert_options(config))
    converted = result.contract.converted
    mode = converted.precision_mode if converted is not None else config.convert.precision_mode
    summary = f"{result.artefact.name} ({result.target_reason}); precision {mode}"
    if result.aipp_file is not None:
        summary += f"; AIPP {result.aipp_file.name}, uint8 input"
    made: dict[str, Any] = {"target": result.target, "artefact": str(result.artefact),
                            "atc_command": list(result.command)}
    if not result.command:  # the stand-in: the ATC command it stands for, made now, while TensorFlow is loaded
        try:
            made["atc_dry_run"] = list(atc_dry_run(config, work))
        except InferError as exc:  # ATC's own checks refuse what the stand-in converted: why, for the report
            made["atc_note"] = exc.message
    return StageDone(summary, (result.artefact, work.contract), made)


# --- dump-bin --------------------------------------------------------------------------------------------------

def _data_inputs(config: PipelineConfig) -> tuple[Path, ...]:
    source = config.data_source
    return () if config.data.source.startswith(GENERATOR_PREFIXES) else (Path(source),)


def plan_dump(config: PipelineConfig, work: WorkLayout, facts: Facts) -> StagePlan:
    settings = asdict(config.data) | {"source": config.data_source}
    command = ("infer", "dump-bin", "-m", str(work.contract), "-o", str(work.bins), config.data_source,
               *_dump_args(config), "--force")
    return StagePlan("dump-bin", (*_data_inputs(config), work.contract), settings, command)


def run_dump(config: PipelineConfig, work: WorkLayout, facts: Facts) -> StageDone:
    # on use: a stage's library, imported when the stage runs (this module's docstring)
    from infer.dump_bin import dump_bins
    from infer.run import tool_gear_flags

    options = replace(config.data.dump, output=work.bins, sources=(("", config.data_source),), force=True)
    result = dump_bins(load_contract(work.contract), options)
    manifest = result.manifest
    shapes = ", ".join(f"{i.folder} {i.dtype}{format_shape(i.shape)}" for i in manifest.inputs)
    padding = f", {manifest.padding} padding rows in the last" if manifest.padding else ""
    summary = f"{manifest.samples} samples -> {manifest.file_count} files per input ({shapes}){padding}"
    # What the report's msame line names, kept: a re-run need not read a dataset.json of 50,000 files for it.
    made = {"input_folders": [item.folder for item in manifest.inputs],
            "gear_flags": list(tool_gear_flags(load_contract(work.contract), manifest))}
    return StageDone(summary, (manifest.path,), made)


# --- run -------------------------------------------------------------------------------------------------------

def plan_run(config: PipelineConfig, work: WorkLayout, facts: Facts) -> StagePlan:
    command = ("infer", "run", str(work.contract), "--input", str(work.bins), "-o", str(work.out),
               *_run_args(config))
    return StagePlan("run", (work.contract, work.bins / "dataset.json"), asdict(run_options(config)), command)


def run_options(config: PipelineConfig) -> RunOptions:
    """[run], which is `infer run`'s options, with msame or ais_bench on the Ascend host of [remote]."""
    return replace(config.run, remote=config.remote)


def run_run(config: PipelineConfig, work: WorkLayout, facts: Facts) -> StageDone:
    # on use: a stage's library, imported when the stage runs (this module's docstring)
    from infer.run import run_model

    result = run_model(work.contract, work.bins, work.out, run_options(config))
    record = result.record
    speed = f", {record.throughput:,.0f} samples/s" if record.throughput else ""
    latency = f", {record.latency.mean_ms:.2f} ms per batch" if record.latency.mean_ms is not None else ""
    on = f" on {record.remote.host}" if record.remote is not None else ""
    summary = f"{record.backend}{on}: {record.samples} samples{speed}{latency} -> {result.folder}"
    return StageDone(summary, (record.path,), {"run_folder": str(result.folder), "backend": record.backend,
                                               "tool_command": list(record.tool_command)})


# --- compare ---------------------------------------------------------------------------------------------------

def plan_compare(config: PipelineConfig, work: WorkLayout, facts: Facts) -> StagePlan:
    run_folder = Path(str(facts.get("run", {}).get("run_folder", work.out)))
    inputs = [work.contract, work.bins / "dataset.json", run_folder / "run.json"]
    if config.labels is not None:
        inputs.append(config.labels)
    # --actual names the runs' root, so the command compares the newest run: the one the report's `infer run`
    # line just made when it is run by hand (a run folder's name is the time it ran). --force: the report exists.
    command = ("infer", "compare", str(work.contract), "--input", str(work.bins), "--actual", str(work.out),
               *_compare_args(config), "--report", str(work.report), "--force")
    return StagePlan("compare", tuple(inputs), asdict(config.compare), command)


def run_compare(config: PipelineConfig, work: WorkLayout, facts: Facts) -> StageDone:

    run_folder = Path(str(facts["run"]["run_folder"]))
    return compare(config, work, run_folder)


Planner = Callable[[PipelineConfig, WorkLayout, Facts], StagePlan]
Runner = Callable[[PipelineConfig, WorkLayout, Facts], StageDone]
STAGE_FUNCTIONS: dict[str, tuple[Planner, Runner]] = {
    "inspect": (plan_inspect, run_inspect),
    "freeze": (plan_freeze, run_freeze),
    "convert": (plan_convert, run_convert),
    "dump-bin": (plan_dump, run_dump),
    "run": (plan_run, run_run),
    "compare": (plan_compare, run_compare),
}
