"""`infer tune-precision`."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from binio.shown_path import shown_path
from infer.cli.console import examples, print_json, say, show
from infer.cli.options import takes_options
from infer.tune.options import TuneOptions

EXAMPLES = examples(
    "infer tune-precision model/model.json --input bins -o tuned",
    "infer tune-precision model/model.json --input bins -o tuned_mixed --precision-mode allow_fp32_to_fp16 --max-ops 4",
)


@takes_options(options=TuneOptions)
def tune_precision(
    model: Path = typer.Argument(..., help="model.json written by infer freeze (converted or not)."),
    bins: Path = typer.Option(..., "--input", "-i", help="The dataset folder (infer dump-bin) to compare on."),
    output: Path = typer.Option(..., "--output", "-o", help="Folder for keep_dtype.cfg, tune.json, the converted "
                                "stand-in (model/) and the ATC command (atc_command.txt)."),
    as_json: bool = typer.Option(False, "--json", help="Print tune.json's document (docs/json-output.md); the exit "
                                 "code is the same."),
    *,
    options: TuneOptions,  # its flags: takes_options
) -> None:
    """Find a small set of ops to keep in fp32 so that compare PASSES under an fp16 precision mode.

    Seeds the search with the ops compare --layerwise points at (first diverging, inf/NaN), then bisects over the
    ops in graph order and drops the ones not needed; every candidate is a real stand-in conversion with a
    keep_dtype file, run and compared under compare's thresholds. Writes keep_dtype.cfg (for ATC's --keep_dtype
    and infer convert --keep-dtype), tune.json (every candidate, its verdict, metrics and time), the converted
    stand-in with the final set and the exact ATC command. Exit 0 when a passing set was found, 1 when not.
    """
    tune_and_show(model, bins, output, options, as_json=as_json)


def tune_and_show(model: Path, bins: Path, output: Path, options: TuneOptions, *, as_json: bool = False) -> None:
    """Runs tune-precision with its progress on stderr and its findings on stdout; exits 1 when no set passes
    (`infer tune-precision` and `infer pipeline tune` alike)."""
    # on use: pulls numpy, which `infer --help` must not import (tests/test_startup.py)
    from binio.process import quote_command
    from infer.compare.metric_names import shown
    from infer.tune import tune_precision as run_tune
    from infer.tune._trial import Candidate

    def candidate_line(candidate: Candidate) -> None:
        cosine = min((m.get("CosineSimilarity", float("nan")) for m in candidate.metrics.values()),
                     default=float("nan"))
        verdict = "PASSED" if candidate.passed else "FAILED"
        ops = f"{len(candidate.ops)} op{'' if len(candidate.ops) == 1 else 's'}"
        say(f"candidate {candidate.index} ({candidate.stage}, {candidate.dataset}): {ops} in fp32 -> {verdict}, "
            f"cosine {shown(cosine, 'CosineSimilarity')} ({candidate.seconds:.1f} s)")

    result = run_tune(model, bins, output, options, progress=say, on_candidate=candidate_line)
    if as_json:
        print_json(result.to_json())
        sys.exit(0 if result.found else 1)
    show(f"before: {result.before.headline or result.before.verdict}")
    if result.ops:
        show(f"kept in fp32 ({len(result.ops)} of {len(result.tunable)} ops):")
        for op in result.ops:
            flops, params = result.share(op)
            show(f"  {op.name}  {op.op_type}  {flops:.2%} of FLOPs, {params:.2%} of parameters")
            if result.twins.get(op.name):
                show(f"    and its twins {', '.join(result.twins[op.name])} (equal ops tf2onnx computes once; "
                     "keep_dtype.cfg names them too, for ATC)")
        total_flops = sum(result.share(op)[0] for op in result.ops)
        total_params = sum(result.share(op)[1] for op in result.ops)
        show(f"  together: {total_flops:.2%} of FLOPs, {total_params:.2%} of parameters")
    if result.after is not None:
        show(f"after: {result.after.headline or result.after.verdict}")
    tried = f"{len(result.candidates)} candidate{'' if len(result.candidates) == 1 else 's'}"
    show(f"{tried} in {result.seconds:.1f} s ({result.mode})")
    show(f"wrote {shown_path(result.output / 'tune.json')}")
    if result.found:
        written = (result.output / name for name in ("keep_dtype.cfg", "model", "atc_command.txt"))
        show(f"wrote {', '.join(map(shown_path, written))}")
        show(f"atc: {quote_command(result.atc_command)}")
        show("FOUND")
        return
    show(f"NOT FOUND: {result.reason}")
    sys.exit(1)
