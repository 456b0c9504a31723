"""`infer inspect`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from infer.cli.console import examples, out, print_json, table
from infer.cli.options import takes_options
from infer.inspect.options import InspectOptions

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from ckpt2pb.inspection import GraphReport


EXAMPLES = examples(
    "infer inspect ckpt/model.ckpt                  # inputs, ranked output candidates, dynamic dims",
    "infer inspect ckpt/model.ckpt --json --top 3",
    "infer inspect model/model.json --precision     # after convert: each op's dtype on the chip",
)


def _shape(shape: tuple[int | None, ...] | None) -> str:
    # on use: pulls numpy, which `infer --help` must not import (tests/test_startup.py)
    from binio.spec import format_shape

    return "unknown rank" if shape is None else format_shape(shape)


def _print_whole(console: Console, table: Table) -> None:
    """Prints `table` no narrower than its tensor names: a name is for copying into --inputs or --outputs, so
    it is never cut short, even where that makes the table wider than the terminal. Off a terminal (a pipe, a
    file) no cell wraps at all: each row stays one line for grep."""
    measured = console.measure(table, options=console.options.update_width(10_000))
    needed = measured.minimum if console.is_terminal else measured.maximum
    console.width = max(console.width, needed)
    console.print(table)


def _tensor_column(table: Table, names: list[str]) -> None:
    table.add_column("tensor", min_width=max(map(len, names), default=6), no_wrap=True)


def _print_host_ops(console: Console, report: GraphReport) -> None:
    """The section of ops that act on the host: each node, its op and why it acts (the checkpoint's saver marked)."""
    from ckpt2pb.host_ops import ALLOW_FLAG

    acting = [op for op in report.host_ops if not op.saver]
    title = (f"Ops that act on this machine when the graph runs: freeze, run and compare refuse them (unless "
             f"{ALLOW_FLAG})" if acting else "Ops that act on this machine: only the checkpoint's saver")
    listed = table(title)
    _tensor_column(listed, [op.node for op in report.host_ops])
    for column in ("op", "what it does", "function"):
        listed.add_column(column)
    for op in report.host_ops:
        what = f"{op.family} (the checkpoint's saver: reads the checkpoint infer is given)" if op.saver else op.family
        listed.add_row(op.node, op.op, what, op.function)
    _print_whole(console, listed)


@takes_options(options=InspectOptions)
def inspect(
    model: Path = typer.Argument(..., help="A checkpoint prefix or folder, a .meta, a frozen .pb, a SavedModel "
                                 "folder, a Keras .h5/.keras file, or an Ascend .om."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON on stdout."),
    top: int = typer.Option(10, "--top", min=1, help="How many output candidates and op types to list."),
    *,
    options: InspectOptions,  # its flags: takes_options
) -> None:
    """List a model's inputs, its likely outputs (ranked), dynamic dims, op types and parameter count.

    Inputs are the placeholders (dynamic dims marked ?, placeholders with a default such as is_training marked)
    and the outputs of a tf.data iterator. Output candidates are the nodes nothing consumes, minus saver,
    summary, initialiser, assert and training ops; what a training graph's loss and metrics read as the model's
    answer (its logits, a softmax beside the loss) comes first even though they consume it, then softmax, sigmoid,
    argmax and logits-like nodes; scalars and shapes computed from the labels are never offered. A placeholder
    only the loss and metrics read is marked a label: inference feeds none.
    With --precision, MODEL is a model.json infer convert wrote: its precision plan is printed instead.

    An .om (read without CANN, both header versions): its header, inputs and outputs as the om stores them, AIPP,
    dynamic gears, the output nodes ATC was given, op counts and the fusion map (each om op with the TF nodes
    fused into it).
    """
    # on use: pulls numpy, which `infer --help` must not import (tests/test_startup.py)
    from ckpt2pb.training_mode import summary
    from infer.inspect import inspect_path

    found = inspect_path(model, options)
    if as_json:
        print_json(found.to_json())
        return
    if found.plan is not None:
        from infer.cli.precision_table import print_plan

        print_plan(found.plan, out())
        return
    if found.om is not None:
        from infer.cli.om_inspect import print_om

        print_om(found.om, top=top)
        return
    report = found.graph
    assert report is not None
    console = out()
    written = report.tf_version or "unknown (the source does not say)"
    console.print(f"{report.source}: {report.kind}, {report.nodes} nodes, written by {written}", markup=False)
    weights = {
        "checkpoint": f"{report.variables} variables, {report.parameters:,} parameters",
        "graph": f"{report.variables} variables, {report.parameters:,} parameters (declared in the graph; "
                 "no checkpoint holds their values)",
        "constants": f"{report.parameters:,} parameters in constants (frozen)",
    }
    weights_line = weights[report.parameters_from]
    if report.output_parameters is not None and report.output_parameters != report.parameters:
        # A training checkpoint's optimizer slots and counters are not the model's: the frozen pb keeps only
        # what the outputs read, so say both, each by what it is.
        weights_line += (f": {report.output_parameters:,} the outputs are computed from, "
                         f"{report.parameters - report.output_parameters:,} only training reads "
                         "(optimizer slots, step counters)")
    console.print(weights_line, markup=False)
    if report.note:
        console.print(report.note, markup=False)
    fixable = [op for op in report.training_mode if op.change]
    stuck = [op for op in report.training_mode if not op.change and not op.suspect]
    suspects = [op for op in report.training_mode if op.suspect]
    if fixable:
        console.print(f"training mode: {summary(fixable)} compute as in training (each batch's own statistics, a "
                      "drawn mask), so a sample's output depends on its batch: freeze puts them in inference mode",
                      markup=False)
    if stuck:
        console.print(f"training mode: {summary(stuck)} cannot be put in inference mode (no moving mean and "
                      "variance in the graph): freeze refuses them; build the graph with training=False",
                      markup=False)
    if suspects:
        console.print(f"training mode?: {summary(suspects)} centre a tensor by its own mean over axis 0: a batch "
                      "norm in training mode where axis 0 is the batch (freeze leaves it and warns)", markup=False)

    if report.signature:
        signature = table(f"Signature {report.signature_name} (its keys name tensors in --inputs and --outputs "
                          "too)")
        for column in ("key", "role"):
            signature.add_column(column)
        _tensor_column(signature, [entry.tensor for entry in report.signature])
        for column in ("dtype", "shape", "computed by (its layer's scope)"):
            signature.add_column(column)
        for entry in report.signature:
            signature.add_row(entry.key, entry.role, entry.tensor, entry.dtype, _shape(entry.shape),
                              entry.computed_by if entry.computed_by != entry.tensor.partition(":")[0] else "")
        _print_whole(console, signature)
        if report.other_signatures:
            console.print(f"other signatures, not read (freeze takes {report.signature_name}): "
                          f"{', '.join(report.other_signatures)}", markup=False)

    inputs = table("Inputs")
    _tensor_column(inputs, [item.tensor for item in report.placeholders])
    for column in ("dtype", "shape", "note"):
        inputs.add_column(column)
    input_keys = report.input_keys
    for item in report.placeholders:
        notes = [f"signature key {input_keys[item.tensor]}"] if item.tensor in input_keys else []
        if item.is_label:  # no dims to fix nor value to --set: freeze leaves it out
            notes.append("a label: only the loss and metrics read it, inference feeds none")
            inputs.add_row(item.tensor, item.dtype, _shape(item.shape), "; ".join(notes))
            continue
        if item.dynamic_dims:
            notes.append("dynamic dims " + ",".join(str(d) for d in item.dynamic_dims) + " (fix with --batch/--inputs)")
        if item.has_default:
            notes.append("has a default: folded at freeze (or --set)")
        elif item.is_switch:
            notes.append(f"a switch: fix it at freeze with --set {item.tensor.split(':')[0]}=false")
        elif item.shape is None and not item.from_iterator:
            notes.append(f"no shape: a setting (keep_prob) is fixed with --set {item.tensor.split(':')[0]}=VALUE, "
                         "data needs its shape in --inputs")
        if item.from_iterator:
            notes.append("tf.data iterator output: cut with --inputs")
        inputs.add_row(item.tensor, item.dtype, _shape(item.shape), "; ".join(notes))
    _print_whole(console, inputs)

    candidates = table("Output candidates (most likely first)")
    candidates.add_column("#")
    keyed = any(c.signature_key for c in report.candidates[:top])
    if keyed:  # a SavedModel's outputs: the key is the name its users know
        candidates.add_column("key")
    _tensor_column(candidates, [c.tensor for c in report.candidates[:top]])
    noted = any(c.read_by_loss for c in report.candidates[:top])
    for column in ("op", "dtype", "shape", *(("note",) if noted else ())):
        candidates.add_column(column)
    for rank, candidate in enumerate(report.candidates[:top], 1):
        cells = (candidate.tensor, candidate.op, candidate.dtype, _shape(candidate.shape))
        note = ("what the loss and metrics read as the model's answer",) if candidate.read_by_loss else ("",)
        candidates.add_row(str(rank), *((candidate.signature_key,) if keyed else ()), *cells,
                           *(note if noted else ()))
    _print_whole(console, candidates)
    if len(report.candidates) > top:
        console.print(f"... {len(report.candidates) - top} more (--top N, or --json)", markup=False)

    if report.host_ops:
        _print_host_ops(console, report)

    histogram = table("Op types")
    histogram.add_column("op")
    histogram.add_column("count", justify="right")
    for op, count in report.op_histogram[:top]:
        histogram.add_row(op, str(count))
    console.print(histogram)
    if len(report.op_histogram) > top:
        console.print(f"... {len(report.op_histogram) - top} more op types", markup=False)
