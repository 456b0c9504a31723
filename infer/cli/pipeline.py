"""`infer pipeline run`, `infer pipeline init` and `infer pipeline tune`."""

from __future__ import annotations

from pathlib import Path

import typer

from binio.errors import InferError
from binio.output import check_output
from binio.shown_path import shown_path, shown_paths
from infer.cli.console import HELP_SETTINGS, PLAIN_HELP, examples, say, show

INIT_EXAMPLES = examples(
    "infer pipeline init ckpt/model.ckpt -o pipeline.toml --data images/ --labels labels.txt",
    "infer pipeline init model/model.pb -o pipeline-pb.toml --data images/",
)
RUN_EXAMPLES = examples(
    "infer pipeline run pipeline.toml",
    "infer pipeline run pipeline.toml --force         # every stage, changed or not",
)
TUNE_EXAMPLES = examples(
    "infer pipeline tune pipeline.toml               # WORK/tune/keep_dtype.cfg, for [convert] keep_dtype",
    "infer pipeline tune pipeline.toml -v            # each candidate as it is tried",
)

pipeline_app = typer.Typer(
    help="Every stage from one TOML file; a re-run skips the stages whose inputs have not changed.",
    epilog=examples("infer pipeline init ckpt/model.ckpt -o pipeline.toml --data images/ --labels labels.txt",
                    "infer pipeline run pipeline.toml", "infer pipeline tune pipeline.toml"),
    no_args_is_help=True,
    rich_markup_mode=PLAIN_HELP,
    context_settings=HELP_SETTINGS,
)


@pipeline_app.command("run", epilog=RUN_EXAMPLES)
def run(
    config_file: Path = typer.Argument(..., help="The pipeline file (infer pipeline init writes one)."),
    force: bool = typer.Option(False, "--force", help="Run every stage, even those whose inputs have not changed."),
) -> None:
    """Run every stage as the pipeline file says; skip those whose inputs have not changed.

    inspect, freeze, convert, dump-bin, run and compare, one line per stage; each records the sha256 of what it
    read (in WORK/pipeline-state.json) and is skipped next time when nothing it reads has changed. Ends with the
    verdict and the equivalent `infer ...`, ATC and msame commands. Exit 1 when compare fails.
    """
    # on use: pulls numpy, which `infer --help` must not import (tests/test_startup.py)
    from infer.pipeline._runner import report_tail, run_pipeline
    from infer.pipeline.config import load_config

    config = load_config(config_file)
    result = run_pipeline(config, on_stage=lambda outcome: show(shown_paths(outcome.line())), force=force)
    for text in report_tail(result):
        show(text)
    say(f"written to {shown_path(result.report_path)}")
    if not result.passed:
        raise typer.Exit(1)


@pipeline_app.command("init", epilog=INIT_EXAMPLES)
def init(
    model: Path = typer.Argument(..., help="The model to inspect: checkpoint prefix or folder, .meta, .pb, "
                                 "SavedModel folder or Keras file."),
    output: Path = typer.Option(Path("pipeline.toml"), "--output", "-o", help="The pipeline file to write."),
    data: str = typer.Option("images/", "--data", help="The data source to write into [data] source."),
    labels: str = typer.Option("", "--labels", help="A labels file to write into [compare] labels."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing pipeline file."),
) -> None:
    """Write a commented pipeline.toml from an inspected model.

    Fills in the model's inputs, its most likely output and its switches (is_training...); every other setting
    is written at its default, commented. Refuses to overwrite an existing file without --force.
    """
    # on use: pulls numpy, which `infer --help` must not import (tests/test_startup.py)
    from infer.pipeline._template import values_from_model, write_template

    if output.is_dir():
        raise InferError(f"-o {output}: is a folder; expected the pipeline file to write",
                         hint=f"-o {output / 'pipeline.toml'}")

    check_output(output, force=force)  # before the model is inspected: a refusal should not take seconds
    values = values_from_model(model, data_source=data, labels=labels, relative_to=output.resolve().parent)
    write_template(output, values, force=force)
    outputs = ", ".join(values.outputs) or "none found: fill in [model] outputs"
    say(f"wrote {output}: inputs {', '.join(values.inputs) or 'none'}; outputs {outputs}")
    say(f"edit it, then: infer pipeline run {output}")


@pipeline_app.command("tune", epilog=TUNE_EXAMPLES)
def tune(
    config_file: Path = typer.Argument(..., help="The pipeline file (its [tune] table: tune-precision's options)."),
) -> None:
    """Find the ops to keep in fp32 so that compare passes, on the pipeline's model and dataset.

    infer tune-precision with the [tune] table's settings, on WORK/model/model.json and WORK/bins (run the pipeline
    first), writing into WORK/tune: keep_dtype.cfg (for [convert] keep_dtype), tune.json, the stand-in with the set
    found and the ATC command. Exit 1 when no set passes.
    """
    from dataclasses import replace

    # on use: pulls numpy, which `infer --help` must not import (tests/test_startup.py)
    from infer.cli.tune_precision import tune_and_show
    from infer.pipeline import load_config, tune_inputs

    config = load_config(config_file)
    contract, bins, output = tune_inputs(config)
    tune_and_show(contract, bins, output, replace(config.tune, force=True))
