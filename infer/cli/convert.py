"""`infer convert`."""

from __future__ import annotations

from pathlib import Path

import typer

from binio.shown_path import shown_path
from infer.cli.console import examples, print_json, say, show, steps, warn
from infer.cli.options import takes_options
from infer.convert.options import ConvertOptions

EXAMPLES = examples(
    "infer convert model/model.json --soc-version Ascend310 --precision-mode force_fp16",
    "infer convert model/model.json --target om --soc-version Ascend310P3 --dry-run   # the ATC command line",
    "infer convert model_dynamic/model.json --soc-version Ascend310 --dynamic-batch 1,4,8",
)


@takes_options(options=ConvertOptions)
def convert(
    model: Path = typer.Argument(..., help="model.json written by infer freeze (or the folder holding it)."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON (docs/json-output.md)."),
    *,
    options: ConvertOptions,  # its flags: takes_options
) -> None:
    """Convert the frozen pb to an Ascend .om with ATC, or to ONNX for the ONNX Runtime stand-in.

    Node names, shapes and dtypes come from model.json; everything ATC would reject (unknown node, chip or
    precision mode, a dynamic batch without an unknown dim) is refused before it runs. Every op is checked against
    the chip's operator table first: an op ATC would not convert is refused for om (a warning for the stand-in),
    one that falls to AI CPU is named. The stand-in emulates the precision plan: each op in the dtype ATC gives it
    on that chip under the precision mode (fp16 storage after every fp16 op). model.json records the result:
    target, path, sha256, the exact ATC command or converter settings, the converted model's input and output
    dtypes (an om's as the om itself stores them), and the precision plan (infer inspect model.json --precision
    prints it). --use-om records an om built elsewhere instead, once its inputs and outputs match the frozen pb's
    (names, shapes, dtypes).
    """
    # on use: pulls numpy, which `infer --help` must not import (tests/test_startup.py)
    from binio.process import quote_command
    from infer.contract import load_contract
    from infer.convert import choose_target, convert_model
    from infer.remote import remote_given

    contract = load_contract(model)
    if options.use_om is None and options.target is None:
        # before the steps: why this target (the conversion chooses the same)
        say(choose_target(None, remote=remote_given(options.remote))[1])
    with steps("convert") as on_step:
        result = convert_model(contract, options, on_step=on_step)
    if result.ignored:
        given = "--use-om (the om is built already)" if result.used_om is not None else f"target {result.target}"
        warn(f"ignored for {given}: {', '.join(result.ignored)}")
    for note in result.notes:  # given options that change nothing here
        warn(note)
    for line in result.findings:  # the precision plan's summary and the pre-check's findings
        say(line)
    if as_json:
        print_json(result.to_json())
        return
    if result.dry_run and result.used_om is not None:
        show(f"would record {result.artefact}: {result.target_reason}")
        say("dry run: nothing written")
        return
    if result.dry_run:
        if result.command:
            show(quote_command(result.command))
        else:
            show(f"would write {shown_path(result.artefact)} from {shown_path(result.contract.pb_path)} with tf2onnx, "
                 f"emulating {options.precision_mode}")
        if result.aipp_file is not None:
            say(f"dry run: nothing written ({result.aipp_file} would be written first)")
        else:
            say("dry run: nothing written")
        return
    converted = result.contract.converted
    assert converted is not None
    if result.used_om is not None:
        show(f"recorded {result.artefact} ({result.target_reason}; {converted.precision_mode}, "
             f"sha256 {converted.sha256[:12]})")
    else:
        show(f"wrote {shown_path(result.artefact)} ({converted.target}, {converted.precision_mode}, "
             f"sha256 {converted.sha256[:12]}) in {result.seconds:.1f} s")
    built = converted.settings.get("remote")
    if isinstance(built, dict):  # ATC ran on an Ascend host: where, and what went back and forth
        from infer.remote import RemoteRecord

        remote = RemoteRecord.from_json(built)
        show(f"built on {remote.host} ({remote.tool}): {remote.traffic.describe()}")
    io = ", ".join(f"{s.name} {s.dtype}" for s in (*converted.inputs, *converted.outputs))
    show(f"inputs/outputs: {io}")
    if converted.gears is not None:  # dump-bin, run and compare take only these shapes
        show(f"dynamic shapes: {converted.gears.allowed()}")
    if result.aipp_file is not None:
        show(f"AIPP config {result.aipp_file}: the model now takes uint8 images")
    show(f"updated {shown_path(result.contract.path)}")
