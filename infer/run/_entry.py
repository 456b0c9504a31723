"""`infer run`'s one entry: a plain run, or a sharded one when the scale options ask for shards.

Every caller (the command line, the pipeline's run stage, compare's golden and emulated runs, tune's trials)
comes through `run`; none of them chooses between the two paths.
"""

from __future__ import annotations

from pathlib import Path

from binio.manifest import DatasetManifest
from infer.contract import ModelContract
from infer.run._batches import Progress
from infer.run._plain import RunResult, run_plain
from infer.run.options import RunError, RunOptions, ScaleOptions, check_dump


def run_model(model: ModelContract | Path | str, bins: DatasetManifest | Path | str, out: Path | str,
        options: RunOptions | None = None, scale: ScaleOptions | None = None, *,
        progress: Progress | None = None) -> RunResult:
    """Runs every batch of `bins` through `model` into ``out/<timestamp>/`` (outputs + run.json).

    Sharded (`run_sharded`) when `scale` asks for it (devices, shards, Ray, a resume: `ScaleOptions.wanted`),
    plain (`run_plain`) otherwise. Both write the same output files, byte for byte; a sharded run's run.json
    adds ``scale_out``. A dry run (``options.dry_run``) is `plan_run`'s, which returns what would run."""
    if options is not None and options.dry_run:
        raise RunError("run_model with dry_run: a dry run runs nothing and has no run folder",
                       hint="call infer.run.plan_run for what the run would do")
    several_hosts = options is not None and options.remote is not None and len(options.remote.host) > 1
    if (scale is not None and scale.wanted) or several_hosts:  # --host a,b: the batches split over the hosts
        if options is not None and options.dump:
            check_dump(options, options.backend or "msame", sharded=True)
        from infer.run._sharded import run_sharded  # its engines (multiprocessing, sockets) serve shards only

        return run_sharded(model, bins, out, options or RunOptions(), scale or ScaleOptions(),
                           progress=progress)  # checks `scale`
    if scale is not None:
        scale.check(options)  # a bad value (--retries -3) is refused even where nothing asks for shards
    return run_plain(model, bins, out, options, progress=progress)
