"""`infer run --dry-run`: everything a run checks first, then what it would run, run nothing and written nowhere.

For msame and ais_bench, the tool's command line of each start, as a user types it on the Ascend server: the tool
by name (``msame``, ``python3 -m ais_bench``; a run starts the one it finds here), paths as infer prints them
(relative to the current folder where they lie under it), and ``--output`` the output root itself, under which the
tool makes its own timestamp folder (a run points it at a work folder inside its run folder and moves the outputs
into infer's layout; `infer compare --actual` reads the tool's own folder). For ONNX Runtime and TensorFlow, one
line saying what would run.
"""

from __future__ import annotations

import copy
from pathlib import Path

from binio.manifest import DatasetManifest
from binio.shown_path import shown_path
from infer.contract import ModelContract
from infer.run._plain import PreparedRun, prepare_run
from infer.run._preflight import input_for
from infer.run._runners.tool import ToolRunner
from infer.run.options import RunError, RunOptions, ScaleOptions
from infer.run.result import RunPlan

_ENGINES = {"onnxrt": "ONNX Runtime", "tf": "TensorFlow"}


def plan_run(model: ModelContract | Path | str, bins: DatasetManifest | Path | str, out: Path | str,
             options: RunOptions | None = None, scale: ScaleOptions | None = None) -> RunPlan:
    """What `run_model(model, bins, out, options)` would run, after the same checks; nothing runs or is written."""
    options = options or RunOptions(dry_run=True)
    if scale is not None and scale.wanted:
        raise RunError("--dry-run with shards: each shard is a start of its own, on a view of the dataset made "
                       "when it runs", hint="leave out --devices, --shards, --engine and --resume to see the command")
    if options.dump:
        raise RunError("--dry-run with --dump: the dump start runs in a folder holding the acl.json a run writes",
                       hint="leave out --dump to see the run's command line; docs/run.md shows the dump's acl.json")
    prepared = prepare_run(model, bins, options)
    manifest = prepared.manifest
    runner = prepared.runner
    inputs = tuple((spec.name, manifest.root / input_for(manifest, spec).folder) for spec in runner.inputs)
    commands: tuple[tuple[str, ...], ...] = ()
    running = prepared.running[0]
    if isinstance(runner, ToolRunner):
        commands = (_tool_argv(runner, [folder for _, folder in inputs], Path(out)),)
        at = f" at {prepared.gear}" if prepared.gear else ""
        running = runner.om
        summary = f"{runner.tool} runs {running.name}{at} over {manifest.file_count} batches in one start"
        if runner.place is not None:  # --host: the same line there, with the paths the run makes on the host
            summary += (f" on {runner.place.name} (the run sends the om and the bins there first; the paths there are "
                        "its working folder's)")
        converted = prepared.contract.converted
        if converted is not None and converted.target != "om":
            # Converted here for the stand-in: the line is for the Ascend server, where ATC makes the om.
            summary += (f" (the om `infer convert --target om` writes there, {shown_path(running)}; converted here "
                        f"for the stand-in, {converted.path})")
    else:
        summary = _in_process(prepared, options, Path(out))
    return RunPlan(backend=prepared.backend, model=running, dataset=manifest.root,
                   batches=manifest.file_count, batch=manifest.batch, samples=manifest.samples, gear=prepared.gear,
                   inputs=inputs, output=Path(out), commands=commands, summary=summary)


def _tool_argv(runner: ToolRunner, input_dirs: list[Path], out: Path) -> tuple[str, ...]:
    shown = copy.copy(runner)  # the runner's own argv, its paths as printed
    shown.om = Path(shown_path(runner.om))
    return tuple(shown.argv([Path(shown_path(d)) for d in input_dirs], Path(shown_path(out)), planned=True))


def _in_process(prepared: PreparedRun, options: RunOptions, out: Path) -> str:
    manifest = prepared.manifest
    engine = _ENGINES.get(prepared.backend, prepared.backend)
    settings = []
    if prepared.backend == "onnxrt" and options.device is not None:
        settings.append(f"GPU {options.device}")
    if options.threads is not None:
        settings.append(f"{options.threads} threads")
    settings.append(f"loop {options.loop}, warm-up {options.warmup}")
    feeds = ", ".join(f"{spec.name} <- {shown_path(manifest.root / input_for(manifest, spec).folder)}"
                      for spec in prepared.runner.inputs)
    at = f" at {prepared.gear}" if prepared.gear else ""
    return (f"{engine} ({'; '.join(settings)}) runs {shown_path(prepared.running[0])}{at} over {manifest.file_count} "
            f"batches of {manifest.batch} ({manifest.samples} samples; {feeds}) into "
            f"{shown_path(out)}/<timestamp>/")
