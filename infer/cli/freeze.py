"""`infer freeze`."""

from __future__ import annotations

from pathlib import Path

import typer

from binio.shown_path import shown_path
from ckpt2pb.compat import WHILE_OPS, describe
from infer.cli.console import examples, print_json, say, show, steps, warn
from infer.cli.options import takes_options
from infer.freeze.options import FreezeOptions

EXAMPLES = examples(
    "infer freeze ckpt/model.ckpt -o model --outputs probs:0 --inputs images:0 --batch 8 --set is_training=false",
    "infer freeze ckpt/model.ckpt -o model_dynamic --outputs probs:0 --batch=-1 --set is_training=false",
)


@takes_options(options=FreezeOptions)
def freeze(
    source: Path = typer.Argument(..., help="A checkpoint prefix or folder, a .meta, a .pb, a SavedModel folder, "
                                  "or a Keras .h5/.keras file."),
    output: Path = typer.Option(..., "--output", "-o", help="Folder for model.pb and model.json."),
    as_json: bool = typer.Option(False, "--json", help="Print the written contract as JSON on stdout."),
    *,
    options: FreezeOptions,  # its flags: takes_options
) -> None:
    """Freeze a checkpoint, SavedModel or Keras model into OUTDIR/model.pb + model.json (the contract).

    Variables become constants; inputs get static shapes (--batch, --inputs; --batch -1 keeps the batch dim unknown
    for ATC's dynamic batch); a tf.data pipeline is cut at the tensors named in --inputs; placeholders with a
    default (is_training) are folded and tf.cond on them keeps only the live branch; the graph is pruned to the
    outputs, devices cleared and default-valued attributes removed so TF 1.15 and ATC read it. Then original and
    frozen graph run on the same seeded inputs: a difference beyond float tolerance is an error (--no-verify skips
    it).
    """
    # on use: pulls numpy, which `infer --help` must not import (tests/test_startup.py)
    from binio.spec import TensorSpec, node_name
    from ckpt2pb.training_mode import summary
    from infer.freeze import freeze_model

    with steps("freeze") as on_step:
        report = freeze_model(source, output, options, on_step=on_step)
    contract = report.contract
    if report.note:
        say(report.note)
    if Path(contract.source.path) != source.resolve():  # a folder: say which of its checkpoints was read
        say(f"read {contract.source.kind} {contract.source.path}")
    if as_json:
        print_json(contract.to_json())
    else:
        def key(spec: TensorSpec) -> str:
            return f"  (signature key {contract.signature_keys[spec.name]})" if spec.name in contract.signature_keys \
                else ""

        for spec in contract.inputs:
            show(f"input   {spec.describe()}{key(spec)}")
        for spec in contract.outputs:
            show(f"output  {spec.describe()}{key(spec)}")
        for name, value in contract.fixed.items():
            show(f"fixed   {node_name(name)} = {value}")

    if report.training_mode:
        say(f"the graph computes in training mode: put {summary(report.training_mode)} in inference mode "
            "(a batch norm on its moving mean and variance, not each batch's own; a dropout off), so no sample's "
            "output depends on its batch neighbours (recorded in model.json as inference_mode)")
    if report.batch_suspects:
        warn(f"{summary(report.batch_suspects)}: a tensor centred by its own mean over axis 0; where axis 0 is the "
             "batch, that is a batch norm in training mode with no moving average in the graph, and a sample's "
             "output depends on its batch neighbours (left as it is: over a sequence's time axis it is the model's "
             "own)")
    if contract.tf115_unknown_ops:
        loops = sorted(name for name, op in contract.tf115_unknown_ops.items() if op in WHILE_OPS)
        warn(f"ops ATC's TensorFlow 1.15 parser does not know: {describe(contract.tf115_unknown_ops)} "
            "(recorded in model.json as tf115_unknown_ops)" + (
                f"; {', '.join(loops)}: a TF2 while loop (control flow v2), which TF 1.15 writes as Enter/Exit: "
                "build the graph after tf.compat.v1.disable_control_flow_v2(), or as a fixed loop "
                "(tf.compat.v1.nn.static_rnn, a Python loop)" if loops else ""))
    if contract.random_ops:
        warn(f"the frozen graph draws random numbers: {describe(contract.random_ops)}; a converted model "
            "cannot reproduce them (recorded in model.json as random_ops)")
    if report.verification is not None:
        say(f"verified: max abs diff {report.verification.worst:.3g} against the original graph "
            f"(tolerance {report.verification.tolerance:g}, seed {report.verification.seed})")
    else:
        say("not verified (--no-verify)")
    say(f"wrote {shown_path(contract.pb_path)} ({report.nodes} nodes) and {shown_path(contract.path)}")
