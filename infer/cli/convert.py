"""`infer convert`."""

from __future__ import annotations

from pathlib import Path

import typer

from atc_wrap.errors import ConvertError
from binio.errors import InferError
from infer.cli.console import say, show


def _batches(text: str) -> tuple[int, ...]:
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not all(p.isdigit() for p in parts):
        raise ConvertError(f"--dynamic-batch {text!r}: expected comma-separated batch sizes, e.g. 1,2,4,8")
    return tuple(int(p) for p in parts)


def convert(
    model: Path = typer.Argument(..., help="model.json written by infer freeze (or the folder holding it)."),
    target: str | None = typer.Option(None, "--target", help="om (ATC) or onnx (the ONNX Runtime stand-in); "
                                      "default: om where atc is found, else onnx."),
    output: Path | None = typer.Option(None, "--output", "-o", help="The converted model's path; default beside "
                                       "model.json, named after the pb (.om / .onnx appended when missing)."),
    soc_version: str = typer.Option("", "--soc-version", help="The chip ATC compiles for, e.g. Ascend310P3 "
                                    "(required for om)."),
    precision_mode: str = typer.Option("force_fp16", "--precision-mode", help="force_fp16 (ATC's default), "
                                       "force_fp32, allow_fp32_to_fp16, must_keep_origin_dtype, "
                                       "allow_mix_precision; the stand-in emulates them."),
    input_fp16_nodes: str = typer.Option("", "--input-fp16-nodes", help='Inputs the model takes as float16: "a;b".'),
    output_type: str = typer.Option("", "--output-type", help='FP32, FP16 (every float output) or '
                                    '"node:0:FP16;node2:1:FP32".'),
    input_format: str = typer.Option("", "--input-format", help="NHWC, NCHW or ND; default from the contract."),
    dynamic_batch: str = typer.Option("", "--dynamic-batch", help="Batch sizes the om accepts, e.g. 1,2,4,8; "
                                      "needs an input with an unknown batch dim."),
    op_select_implmode: str = typer.Option("", "--op-select-implmode", help="high_precision, high_performance, "
                                           "high_precision_for_all or high_performance_for_all (om only)."),
    fusion_switch_file: Path | None = typer.Option(None, "--fusion-switch-file", help="ATC fusion switch file."),
    keep_dtype: Path | None = typer.Option(None, "--keep-dtype", help="ATC keep_dtype file: op names (TF node "
                                           "names) or OpType::Type, one a line, kept in fp32; emulated by the "
                                           "stand-in."),
    modify_mixlist: Path | None = typer.Option(None, "--modify-mixlist", help="ATC modify_mixlist JSON (black-, "
                                               "white-, gray-list to-add/to-remove op types); allow_mix_precision "
                                               "only."),
    customize_dtypes: Path | None = typer.Option(None, "--customize-dtypes", help="ATC customize_dtypes file "
                                                 "(Opname::InputDtype:...,OutputDtype:... lines), applied over "
                                                 "--keep-dtype."),
    atc_arg: list[str] = typer.Option([], "--atc-arg", help="One more ATC argument, as --atc-arg=--log=info; "
                                      "repeatable."),
    opset: int | None = typer.Option(None, "--opset", help="ONNX opset (onnx only); default: the highest both "
                                     "tf2onnx and onnxruntime handle."),
    allow_unknown_soc: bool = typer.Option(False, "--allow-unknown-soc", help="Pass a --soc-version that is not "
                                           "in the known list (a chip newer than this tool)."),
    timeout: float = typer.Option(3600.0, "--timeout", help="Seconds before a hung ATC is stopped."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the exact ATC command (or what the stand-in "
                                 "would write) and change nothing."),
    aipp: bool = typer.Option(False, "--aipp", help="Preprocess on the NPU: write aipp.cfg beside the model from "
                              "--mean/--std/--scale/--color and pass it to ATC (--insert_op_conf); the model then "
                              "takes uint8 images."),
    aipp_config: Path | None = typer.Option(None, "--aipp-config", help="A hand-written AIPP config (static "
                                            "aipp_op) instead of --aipp's settings."),
    mean: str | None = typer.Option(None, "--mean", help="--aipp: subtracted after --scale, one or per channel."),
    std: str | None = typer.Option(None, "--std", help="--aipp: divided by after --mean, one or per channel."),
    scale: float = typer.Option(1.0, "--scale", help="--aipp: pixels are multiplied by this first."),
    color: str = typer.Option("RGB", "--color", help="--aipp: the channel order the model was trained on, RGB or "
                              "BGR (the source images are RGB)."),
    aipp_input_format: str = typer.Option("", "--aipp-input-format", help="RGB888_U8, YUV420SP_U8, XRGB8888_U8 "
                                          "or YUV400_U8; default RGB888_U8 (YUV400_U8 for 1 channel)."),
    aipp_src_size: str | None = typer.Option(None, "--aipp-src-size", help="W,H of the uint8 source images; "
                                             "default the model input's size."),
    aipp_crop: str | None = typer.Option(None, "--aipp-crop", help="X,Y of the crop window in the source; "
                                         "default centred."),
    aipp_csc: str | None = typer.Option(None, "--aipp-csc", help="YUV420SP_U8's colour-space conversion: jpeg "
                                        "(default), bt601n, bt601w, bt709n or bt709w."),
) -> None:
    """Convert the frozen pb to an Ascend .om with ATC, or to ONNX for the ONNX Runtime stand-in.

    Node names, shapes and dtypes come from model.json; everything ATC would reject (unknown node, chip or
    precision mode, a dynamic batch without an unknown dim) is refused before it runs. The stand-in emulates
    ATC's precision mode (fp16 storage after every op). model.json records the result: target, path, sha256,
    the exact ATC command or converter settings, and the converted model's input and output dtypes.
    """
    # on use: pulls numpy, which `infer --help` must not import (tests/test_startup.py)
    from binio.process import quote_command
    from infer.aipp.config import AippOptions
    from infer.cli.image_options import image_options, int_pair
    from infer.contract import load_contract
    from infer.convert._convert import ConvertOptions, choose_target, convert_model

    aipp_options = None
    if aipp or aipp_config is not None:
        aipp_options = AippOptions(
            preprocessing=image_options(resize=None, color=color, scale=scale, mean=mean, std=std),
            input_format=aipp_input_format.upper(), src_size=int_pair(aipp_src_size, "--aipp-src-size", "256,256"),
            crop=int_pair(aipp_crop, "--aipp-crop", "16,16"), csc=aipp_csc, config=aipp_config)
    else:
        given = [flag for flag, present in (
            ("--mean", mean is not None), ("--std", std is not None), ("--scale", scale != 1.0),
            ("--color", color.upper() != "RGB"), ("--aipp-input-format", bool(aipp_input_format)),
            ("--aipp-src-size", aipp_src_size is not None), ("--aipp-crop", aipp_crop is not None),
            ("--aipp-csc", aipp_csc is not None)) if present]
        if given:
            raise InferError(f"{', '.join(given)} without --aipp: these set the preprocessing AIPP does on the NPU",
                             hint="add --aipp (or preprocess host-side with infer dump-bin's options)")

    contract = load_contract(model)
    chosen, reason = choose_target(target)
    if target is None:
        say(reason)
    options = ConvertOptions(
        target=chosen, output=output, soc_version=soc_version, precision_mode=precision_mode,
        input_fp16_nodes=input_fp16_nodes, output_type=output_type, input_format=input_format,
        dynamic_batch=_batches(dynamic_batch), op_select_implmode=op_select_implmode,
        fusion_switch_file=fusion_switch_file, keep_dtype=keep_dtype, modify_mixlist=modify_mixlist,
        customize_dtypes=customize_dtypes, atc_args=tuple(atc_arg), opset=opset,
        allow_unknown_soc=allow_unknown_soc, dry_run=dry_run, timeout=timeout, aipp=aipp_options,
    )
    result = convert_model(contract, options)
    if result.ignored:
        say(f"ignored for target {result.target}: {', '.join(result.ignored)}")
    for note in result.notes:
        say(note)
    if result.dry_run:
        if result.command:
            show(quote_command(result.command))
        else:
            show(f"would write {result.artefact} from {result.contract.pb_path} with tf2onnx, "
                 f"emulating {options.precision_mode}")
        if result.aipp_file is not None:
            say(f"dry run: nothing written ({result.aipp_file} would be written first)")
        else:
            say("dry run: nothing written")
        return
    converted = result.contract.converted
    assert converted is not None
    show(f"wrote {result.artefact} ({converted.target}, {converted.precision_mode}, "
         f"sha256 {converted.sha256[:12]}) in {result.seconds:.1f} s")
    io = ", ".join(f"{s.name} {s.dtype}" for s in (*converted.inputs, *converted.outputs))
    show(f"inputs/outputs: {io}")
    if result.aipp_file is not None:
        show(f"AIPP config {result.aipp_file}: the model now takes uint8 images")
    show(f"updated {result.contract.path}")
