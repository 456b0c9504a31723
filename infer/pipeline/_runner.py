"""Runs the stages of a pipeline in order, skipping those whose inputs and settings have not changed, and writes
the report that ends with the commands to reproduce every stage by hand."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from binio.atomic import write_bytes_atomic
from binio.errors import InferError
from binio.lock import folder_lock
from binio.manifest import load_manifest
from binio.output import LOCK_NAME
from binio.process import quote_command
from infer._version import __version__
from infer.contract import load_contract
from infer.pipeline._calls import atc_dry_run
from infer.pipeline._digests import DigestCache, digest_paths
from infer.pipeline._gears import PER_GEAR_STAGES, PipelineGear, pipeline_gears
from infer.pipeline._stages import STAGE_FUNCTIONS, STAGES, WorkLayout
from infer.pipeline._state import (
    STATE_FILE,
    StageRecord,
    load_state_and_digests,
    save_state,
    settings_digest,
)
from infer.pipeline.config import PipelineConfig, load_config
from infer.run import msame_argv, tool_gear_flags

REPORT_FILE = "pipeline-report.txt"


class StageError(InferError):
    """A stage refused its input; the message starts with the stage's name (``freeze: output 'x' ...``)."""


@dataclass(frozen=True)
class StageOutcome:
    stage: str
    ran: bool  # False: skipped, nothing it reads changed since it last ran
    summary: str
    seconds: float
    inputs: dict[str, str]  # path -> sha256 of what it read
    command: tuple[str, ...]  # the equivalent `infer ...` argv

    def line(self) -> str:
        status = f"{self.seconds:5.1f}s" if self.ran else "  skip"
        suffix = "" if self.ran else " (unchanged)"
        return f"{self.stage:<9}{status}  {self.summary}{suffix}"


@dataclass(frozen=True)
class PipelineResult:
    work_dir: Path
    stages: tuple[StageOutcome, ...]
    passed: bool
    verdict: str  # compare's last line: PASSED or FAILED: ..., then what was compared with what
    report_html: Path | None
    report_path: Path  # the pipeline's own text report
    atc_command: tuple[str, ...]  # the ATC argv that makes the om (what convert ran, or would run)
    atc_note: str  # why there is no ATC command, when there is none
    msame_command: tuple[str, ...]  # the first gear's, with gears (msame_commands has each)
    msame_commands: tuple[tuple[str, ...], ...] = ()  # one per gear, each with its gear flag and its own bins
    gear_reports: tuple[tuple[str, Path], ...] = ()  # (gear label, its compare's HTML report) per gear
    host: str = ""  # [remote]'s host(s): ATC and the tool ran there, by the stages' own commands (--host)
    ran_there: tuple[tuple[str, ...], ...] = ()  # the tool's command lines as they ran on the host, per gear
    # A failed verdict as `infer compare` prints it: one short line, then what it rests on (the reasons, the cause,
    # what was compared with what), a line each; "" where compare's record predates them (`verdict` then).
    headline: str = ""
    verdict_details: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return self.passed

    @property
    def commands(self) -> tuple[tuple[str, ...], ...]:
        return tuple(s.command for s in self.stages)

    def verdict_lines(self) -> list[str]:
        """The verdict as printed: a failed one as `infer compare` prints it (one short line, what it rests on below
        it, the reasons once), else the verdict line."""
        if not self.passed and self.headline:
            return [self.headline, *(f"  {line}" for line in self.verdict_details)]
        return [self.verdict]


def msame_command(work: WorkLayout, om: Path, config: PipelineConfig,
                  dumped: Mapping[str, Any] | None = None) -> tuple[str, ...]:
    """msame's own command line for the bins of this pipeline (folder mode, one folder per input), with the flag
    that names their gear for a model with gears. `dumped`: dump-bin's facts, which name the input folders and the
    gear flags (`run_dump`); the dataset and the contract are read for them only where they do not."""
    folders_named, flags_named = (dumped or {}).get("input_folders"), (dumped or {}).get("gear_flags")
    if isinstance(folders_named, list) and isinstance(flags_named, list):
        folders, flags = [work.bins / str(folder) for folder in folders_named], tuple(map(str, flags_named))
    else:
        try:
            manifest = load_manifest(work.bins)
            folders = [work.bins / item.folder for item in manifest.inputs]
            flags = tool_gear_flags(load_contract(work.contract), manifest)
        except InferError:
            folders, flags = [work.bins / "INPUT"], ()
    return (*msame_argv("msame", om, folders, work.out / "msame", device=config.run.device, loop=config.run.loop),
            *flags)


def report_tail(result: PipelineResult) -> list[str]:
    """What follows the stage lines: the verdict, the HTML report, and the commands that reproduce each stage."""
    lines = result.verdict_lines()
    if result.gear_reports:
        lines += [f"report ({label}): {html}" for label, html in result.gear_reports]
    elif result.report_html is not None:
        lines.append(f"report: {result.report_html}")
    lines.append("the same, stage by stage:")
    lines += [f"  {quote_command(outcome.command)}" for outcome in result.stages]
    if result.host:  # the commands above ran ATC and the tool there (--host): what they ran, not a job by hand
        lines.append(f"on {result.host} (--host), infer ran:")
        lines.append(f"  {quote_command(result.atc_command)}" if result.atc_command
                     else f"  (no ATC command: {result.atc_note})")
        lines += [f"  {quote_command(command)}" for command in result.ran_there]
        return lines
    lines.append("on an Ascend machine, by hand:")
    lines.append(f"  {quote_command(result.atc_command)}" if result.atc_command
                 else f"  (no ATC command: {result.atc_note})")
    lines += [f"  {quote_command(command)}" for command in result.msame_commands or (result.msame_command,)]
    return lines


def _report_text(config: PipelineConfig, result: PipelineResult) -> str:
    lines = [f"infer pipeline {config.path}", f"infer {__version__}", ""]
    lines += [outcome.line() for outcome in result.stages]
    lines += ["", *report_tail(result)]
    return "\n".join(lines) + "\n"


def _atc_command(config: PipelineConfig, work: WorkLayout,
                 facts: dict[str, dict[str, Any]]) -> tuple[tuple[str, ...], str]:
    """The ATC argv convert ran, or the one `infer convert --target om --dry-run` gives; else why there is none."""
    if "convert" not in facts:
        return (), "convert has not run"
    ran = tuple(str(a) for a in facts["convert"].get("atc_command", ()))
    if ran:
        return ran, ""
    if "atc_dry_run" in facts["convert"]:  # made when convert ran (`run_convert`): a re-run reads no pb for it
        return tuple(str(a) for a in facts["convert"]["atc_dry_run"]), ""
    if "atc_note" in facts["convert"]:
        return (), str(facts["convert"]["atc_note"])

    try:
        return atc_dry_run(config, work), ""
    except InferError as exc:  # the stand-in converted it; ATC's own checks refuse it: say why, keep the result
        return (), exc.message


def run_pipeline(config: PipelineConfig | Path | str, *, on_stage: Callable[[StageOutcome], None] | None = None,
                 stages: Sequence[str] = STAGES, force: bool = False,
                 on_start: Callable[[str], None] | None = None) -> PipelineResult:
    """Runs `stages` of `config` (a pipeline TOML file, or one already loaded) in order; a stage is skipped
    when its settings and the sha256 of everything it reads and wrote are as recorded (unless `force`).
    `on_start` hears of each stage (its key) as it starts, `on_stage` as it finishes."""
    if not isinstance(config, PipelineConfig):
        config = load_config(config)
    work = WorkLayout(config.work_dir)
    new = not os.path.lexists(work.root)
    try:
        with folder_lock(work.root, command="pipeline run"):  # one pipeline per work folder at a time
            return _run_stages(config, work, on_stage, stages, force, on_start)
    except InferError:
        if new:
            _remove_if_only_state(work.root)
        raise


def _remove_if_only_state(root: Path) -> None:
    """A work folder this run made and a refusal left holding nothing but its state file (no stage wrote a file:
    the model was refused as it loaded) is removed: a refusal leaves nothing. One where a stage wrote its files is
    kept, for the next run to go on from."""
    try:
        names = {entry.name for entry in os.scandir(root)}
        if names <= {STATE_FILE, LOCK_NAME}:
            for name in names:
                (root / name).unlink(missing_ok=True)
            root.rmdir()
    except OSError:
        pass  # what cannot be removed stays: the refusal itself is what the user needs to see


@dataclass(frozen=True)
class _Step:
    """One stage as it runs: for a model with gears, dump-bin, run and compare once per gear (``run@b4``)."""

    key: str  # its name in the state file and the report
    stage: str
    config: PipelineConfig
    work: WorkLayout


def _steps(stages: Sequence[str], config: PipelineConfig, work: WorkLayout,
           gears: tuple[PipelineGear, ...]) -> list[_Step]:
    steps: list[_Step] = []
    for name in stages:
        if gears and name in PER_GEAR_STAGES:
            steps += [_Step(f"{name}@{gear.tag}", name, gear.config, replace(work, gear=gear.tag)) for gear in gears]
        else:
            steps.append(_Step(name, name, config, work))
    return steps


def _facts_for(facts: dict[str, dict[str, Any]], work: WorkLayout) -> dict[str, dict[str, Any]]:
    """What a gear's stage reads of the stages before it: that gear's dump, run and compare."""
    if not work.gear:
        return facts
    return {**facts, **{name: facts.get(f"{name}@{work.gear}", {}) for name in PER_GEAR_STAGES}}


@dataclass(frozen=True)
class _Verdict:
    passed: bool
    line: str  # compare's verdict line, or the one across gears
    html: str  # the HTML report ("" without one)
    headline: str = ""  # a failed verdict's short line ("" where compare's record predates it)
    details: tuple[str, ...] = ()  # what the short line rests on


def _failed_parts(compared: dict[str, Any]) -> tuple[str, tuple[str, ...]]:
    """A failed compare's short line and its details, from its record ("" and () in a record written before them)."""
    return str(compared.get("headline") or ""), tuple(str(line) for line in compared.get("details") or ())


def _verdict(facts: dict[str, dict[str, Any]], gears: tuple[PipelineGear, ...]) -> _Verdict:
    """Compare's verdict, or, with gears, the one across them."""
    if not gears:
        compared = facts.get("compare", {})
        headline, details = _failed_parts(compared)
        return _Verdict(bool(compared.get("passed", False)),
                        str(compared.get("verdict", "no verdict: compare did not run")),
                        str(compared.get("report_html") or ""), headline, details)
    found = [(gear, facts.get(f"compare@{gear.tag}", {})) for gear in gears]
    missing = [gear.label for gear, compared in found if not compared]
    if missing:
        return _Verdict(False, f"no verdict: compare did not run for {', '.join(missing)}", "")
    failing = [(gear, compared) for gear, compared in found if not compared.get("passed")]
    html = str((failing or found)[0][1].get("report_html") or "")
    if failing:
        lines: list[str] = []
        for gear, compared in failing:
            short, below = _failed_parts(compared)
            lines += [f"{gear.label}: {short or compared.get('verdict')}", *(f"  {line}" for line in below)]
        return _Verdict(False, "FAILED: " + "; ".join(f"{gear.label}: {compared.get('verdict')}" for gear, compared in
                                                      failing), html,
                        f"FAILED: {len(failing)} of {len(gears)} gears: {', '.join(g.label for g, _ in failing)}",
                        tuple(lines))
    return _Verdict(True, f"PASSED: {len(gears)} gears ({', '.join(gear.label for gear in gears)})", html)


def _run_stages(config: PipelineConfig, work: WorkLayout, on_stage: Callable[[StageOutcome], None] | None,
                stages: Sequence[str], force: bool, on_start: Callable[[str], None] | None = None) -> PipelineResult:
    records, cache = ({}, DigestCache()) if force else load_state_and_digests(work.root)
    facts: dict[str, dict[str, Any]] = {name: dict(r.facts) for name, r in records.items()}
    gears = pipeline_gears(config)
    outcomes = []
    for step in _steps(stages, config, work, gears):
        if on_start is not None:
            on_start(step.key)
        plan_stage, run_stage = STAGE_FUNCTIONS[step.stage]
        plan = plan_stage(step.config, step.work, _facts_for(facts, step.work))
        inputs = digest_paths(plan.inputs, cache)
        settings = settings_digest(plan.settings)
        previous = records.get(step.key)
        start = time.monotonic()
        if previous is not None and previous.is_current(settings, inputs, cache):
            outcome = StageOutcome(step.key, False, previous.summary, 0.0, inputs, plan.command)
        else:
            try:
                done = run_stage(step.config, step.work, _facts_for(facts, step.work))
            except InferError as exc:  # the stage's own refusal, said with the stage it came from
                raise StageError(f"{step.key}: {exc.message}", hint=exc.hint, exit_code=exc.exit_code) from None
            records[step.key] = StageRecord(step.key, settings, inputs, digest_paths(done.outputs, cache),
                                            done.summary, done.facts)
            facts[step.key] = dict(done.facts)
            save_state(work.root, records, cache)
            # the command may name what the stage made (the run folder)
            plan = plan_stage(step.config, step.work, _facts_for(facts, step.work))
            outcome = StageOutcome(step.key, True, done.summary, time.monotonic() - start, inputs, plan.command)
        outcomes.append(outcome)
        if on_stage is not None:
            on_stage(outcome)

    if cache.changed:  # digests taken this run (files new, changed or just written) are kept for the next
        save_state(work.root, records, cache)
    verdict = _verdict(facts, gears)
    atc_command, atc_note = _atc_command(config, work, facts)
    artefact = Path(str(facts.get("convert", {}).get("artefact", work.model_dir / "model.om")))
    om = artefact if artefact.suffix == ".om" else artefact.with_suffix(".om")
    msame_commands = tuple(msame_command(geared, om, config, _facts_for(facts, geared).get("dump-bin"))
                           for geared in (replace(work, gear=gear.tag) for gear in gears))
    ran_there = tuple(tuple(str(a) for a in facts.get(key, {}).get("tool_command", ()))
                      for key in ([f"run@{gear.tag}" for gear in gears] or ["run"]) if facts.get(key, {}).get(
                          "tool_command"))
    result = PipelineResult(
        work_dir=work.root, stages=tuple(outcomes), passed=verdict.passed, verdict=verdict.line,
        report_html=Path(verdict.html) if verdict.html else None,
        report_path=work.root / REPORT_FILE,
        atc_command=atc_command, atc_note=atc_note,
        msame_command=msame_commands[0] if msame_commands else msame_command(work, om, config,
                                                                              facts.get("dump-bin")),
        msame_commands=msame_commands,
        gear_reports=tuple((gear.label, Path(str(gear_html))) for gear in gears
                           if (gear_html := facts.get(f"compare@{gear.tag}", {}).get("report_html"))),
        host=", ".join(config.remote.host) if config.remote is not None else "", ran_there=ran_there,
        headline=verdict.headline, verdict_details=verdict.details,
    )
    write_bytes_atomic(result.report_path, _report_text(config, result).encode())
    return result


def tune_inputs(config: PipelineConfig) -> tuple[Path, Path, Path]:
    """(model.json, the dataset, the output folder) `infer pipeline tune` works on: what `infer pipeline run`
    froze and dumped, refused by name when it has not run yet. With gears, the first gear's dataset."""
    gears = pipeline_gears(config)
    work = WorkLayout(config.work_dir, gear=gears[0].tag if gears else "")
    for made, stage in ((work.contract, "freeze"), (work.bins / "dataset.json", "dump-bin")):
        if not made.is_file():
            raise StageError(f"{config.path}: no {made} yet ({stage} writes it)",
                             hint=f"infer pipeline run {config.path} first")
    return work.contract, work.bins, work.root / "tune"
