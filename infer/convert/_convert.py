"""`infer convert`: the frozen pb of a contract -> an Ascend .om through ATC, or the ONNX Runtime stand-in.

Reads the contract, converts, and writes the converted model's description back into the contract.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from atc_wrap.aipp import AippConfig
from atc_wrap.atc_command import AtcOptions, build_atc_command
from atc_wrap.atc_run import find_atc, require_atc, run_atc
from atc_wrap.dynamic_shapes import check_dynamic
from atc_wrap.errors import ConvertError
from atc_wrap.op_controls import check_mixlist_mode, ignored_controls, read_op_controls
from atc_wrap.opset import check_opset
from atc_wrap.precision import (
    check_precision_mode,
    parse_input_fp16_nodes,
    parse_output_type,
)
from atc_wrap.soc import ASSUMED_SOC_VERSION
from atc_wrap.standin import check_output_types, convert_to_onnx
from binio.atomic import write_bytes_atomic
from binio.binfile import sha256_file
from binio.memory import check_fits
from binio.steps import OnStep, no_steps
from ckpt2pb.protobuf import HostOpPolicy, read_graph_def
from infer.aipp import AIPP_FILE, aipp_config_for, aipp_record
from infer.contract import ConvertedInfo, ModelContract, as_contract
from infer.convert._gears import gear_request, gear_settings
from infer.convert._om_record import with_om_record
from infer.convert._precheck import prepare
from infer.convert._use_om import use_om
from infer.convert.options import TARGETS, ConvertOptions
from infer.convert.result import ConvertResult


def convert_model(model: ModelContract | Path | str, options: ConvertOptions | None = None, *,
                  on_step: OnStep = no_steps) -> ConvertResult:
    """Converts the contract's pb per `options` and saves the contract with its `converted` section. `on_step`
    hears each step as it starts (the CLI shows them on a terminal)."""
    contract = as_contract(model)
    options = options or ConvertOptions()
    contract.check_pb_unchanged()
    if options.use_om is not None:
        return use_om(contract, options)
    check_precision_mode(options.precision_mode)
    _check_batch_fits(contract)
    check_mixlist_mode(options.modify_mixlist, options.precision_mode)
    target, reason = choose_target(options.target)
    if target == "onnx":
        return _convert_onnx(contract, options, reason, on_step)
    return _convert_om(contract, options, reason, on_step)


def _check_batch_fits(contract: ModelContract) -> None:
    """Refuses a model one batch of whose inputs cannot be held in memory: nothing after convert could run it."""
    specs = [s.with_shape(tuple(1 if d is None else d for d in s.shape)) for s in contract.inputs]
    check_fits(sum(s.nbytes() for s in specs),
               f"{contract.path}: one batch of the inputs " + ", ".join(s.describe() for s in specs),
               hint="re-freeze with a smaller --batch or fixed shapes (infer freeze --inputs 'NAME[DIMS]')")


def choose_target(asked: str | None) -> tuple[str, str]:
    """The target and one plain line saying why: om where ATC is found, else the ONNX stand-in."""
    if asked is not None:
        if asked not in TARGETS:
            raise ConvertError(f"--target {asked!r}: expected one of {', '.join(TARGETS)}")
        return asked, f"target {asked}, as asked"
    atc = find_atc()
    if atc is None:
        return "onnx", "ATC not found: converting to the ONNX Runtime stand-in (--target om to insist)"
    return "om", f"ATC found at {atc}: converting to om"


def _artefact(contract: ModelContract, options: ConvertOptions, suffix: str) -> Path:
    if options.output is None:
        return contract.folder.absolute() / f"{Path(contract.pb).stem}{suffix}"
    output = Path(options.output).absolute()
    if output.is_dir():
        output = output / f"{Path(contract.pb).stem}{suffix}"
    elif output.suffix != suffix:
        output = output.with_name(output.name + suffix)
    # model.json records the converted model's path relative to its folder, and a path read from it must stay
    # inside it (so the folder moves as a whole, and a model.json received from someone names nothing elsewhere).
    if not output.resolve().is_relative_to(contract.folder.resolve()):
        raise ConvertError(f"-o {options.output}: outside the model folder {contract.folder}",
                           hint="write the converted model inside it (e.g. -o "
                                f"{contract.folder / output.name}), or copy the model folder there first")
    return output


def _relative(path: Path, folder: Path) -> str:
    return os.path.relpath(Path(path).resolve(), Path(folder).resolve())


def _aipp(contract: ModelContract, options: ConvertOptions,
          artefact: Path) -> tuple[AippConfig | None, Path | None, str]:
    """(AippConfig or None, where aipp.cfg goes: beside the converted model, its text). A hand-written file is
    copied as written (its comments kept); a generated one says what it was made from."""
    if options.aipp is None:
        return None, None, ""
    config = aipp_config_for(contract, options.aipp)
    destination = artefact.parent / AIPP_FILE
    if options.aipp.config is not None:
        text = Path(options.aipp.config).read_text(encoding="utf-8")
    else:
        prep = options.aipp.preprocessing
        text = config.to_prototxt((
            f"AIPP for {contract.inputs[config.related_input_rank].name}, written by infer convert --aipp from the "
            "training preprocessing", f"(pixel * {prep.scale!r} - mean {list(prep.mean)}) / std {list(prep.std)}, "
            f"channels {prep.color}: mean_chn + min_chn = mean / scale, var_reci_chn = scale / std",
            "hardware order: channel swap -> crop -> colour-space conversion -> normalisation; output fp16"))
    return config, destination, text


def _write_aipp(destination: Path | None, text: str) -> bytes | None:
    """Writes aipp.cfg; returns what was there before (None: nothing), for `_restore_aipp`."""
    if destination is None:
        return None
    before = destination.read_bytes() if destination.is_file() else None
    write_bytes_atomic(destination, text.encode("utf-8"))
    return before


def _restore_aipp(destination: Path | None, before: bytes | None) -> None:
    """After a failed ATC run: aipp.cfg as it was, so it still belongs to the model the contract describes."""
    if destination is None:
        return
    if before is None:
        destination.unlink(missing_ok=True)
    else:
        write_bytes_atomic(destination, before)


def _with_aipp(settings: dict[str, Any], options: ConvertOptions, config: AippConfig | None, destination: Path | None,
               folder: Path) -> None:
    if options.aipp is not None and config is not None and destination is not None:
        settings["aipp"] = aipp_record(config, options.aipp, _relative(destination, folder))


def _convert_om(contract: ModelContract, options: ConvertOptions, reason: str, on_step: OnStep) -> ConvertResult:
    atc = find_atc() if options.dry_run else require_atc()
    om = _artefact(contract, options, ".om")
    aipp, aipp_file, aipp_text = _aipp(contract, options, om)
    graph_def = read_graph_def(contract.pb_path, HostOpPolicy.of(options.allow_host_ops))
    command = build_atc_command(
        str(atc) if atc is not None else "atc", contract.pb_path.absolute(), graph_def,
        contract.inputs, contract.outputs, om,
        AtcOptions(
            soc_version=options.soc_version, precision_mode=options.precision_mode,
            input_format=options.input_format, input_fp16_nodes=options.input_fp16_nodes,
            output_type=options.output_type, gears=gear_request(options),
            op_select_implmode=options.op_select_implmode,
            fusion_switch_file=_absolute(options.fusion_switch_file),
            keep_dtype=_absolute(options.keep_dtype), modify_mixlist=_absolute(options.modify_mixlist),
            customize_dtypes=_absolute(options.customize_dtypes), extra_args=options.atc_args,
            allow_unknown_soc=options.allow_unknown_soc, insert_op_conf=aipp_file, aipp=aipp,
        ),
    )
    ignored = ("--opset",) if options.opset is not None else ()
    notes = ignored_controls(command.controls, options.precision_mode)
    prepared = prepare(contract, options, graph_def, command.controls, target="om")
    if options.dry_run:
        return ConvertResult(contract=contract, target="om", artefact=om, target_reason=reason,
                             command=command.argv, dry_run=True, ignored=ignored, notes=notes,
                             aipp_file=aipp_file, plan=prepared.plan, findings=prepared.lines)
    before = _write_aipp(aipp_file, aipp_text)  # ATC reads it: written first, put back if ATC fails
    try:
        on_step(f"running ATC for {options.soc_version or 'the chip'} (minutes on a large model)")
        run = run_atc(command, timeout=options.timeout)
    except BaseException:
        _restore_aipp(aipp_file, before)
        raise
    settings: dict[str, Any] = {
        "converter": "atc", "atc": str(atc), "cwd": str(om.parent), "input_format": command.input_format,
        "input_fp16_nodes": options.input_fp16_nodes, "output_type": options.output_type,
        **gear_settings(options), "op_select_implmode": options.op_select_implmode,
        "fusion_switch_file": str(options.fusion_switch_file or ""), "keep_dtype": str(options.keep_dtype or ""),
        "modify_mixlist": str(options.modify_mixlist or ""), "customize_dtypes": str(options.customize_dtypes or ""),
        "op_control_files": dict(command.controls.texts),
        "atc_args": list(options.atc_args), "seconds": round(run.seconds, 3), "warnings": list(run.warnings),
    }
    _with_aipp(settings, options, aipp, aipp_file, contract.folder)
    converted = with_om_record(contract, ConvertedInfo(
        target="om", path=_relative(om, contract.folder), sha256=sha256_file(om), inputs=command.inputs,
        outputs=command.outputs, soc_version=options.soc_version, precision_mode=options.precision_mode,
        command=run.argv, settings=settings,
        precision_plan=prepared.plan.to_json() if prepared.plan is not None else None, gears=command.gears,
    ))
    saved = contract.with_converted(converted).save()
    return ConvertResult(contract=saved, target="om", artefact=om, target_reason=reason, command=run.argv,
                         ignored=ignored, notes=notes, seconds=run.seconds, aipp_file=aipp_file,
                         plan=prepared.plan, findings=prepared.lines)


def _absolute(path: Path | None) -> Path | None:
    return None if path is None else Path(path).absolute()


def _atc_only(options: ConvertOptions) -> tuple[str, ...]:
    given = {  # --soc-version is the stand-in's too: it chooses the operator table of its precision plan
        "--input-format": bool(options.input_format),
        "--op-select-implmode": bool(options.op_select_implmode),
        "--fusion-switch-file": options.fusion_switch_file is not None,
        "--atc-arg": bool(options.atc_args),
        "--allow-unknown-soc": options.allow_unknown_soc,
    }
    return tuple(flag for flag, present in given.items() if present)


def _convert_onnx(contract: ModelContract, options: ConvertOptions, reason: str, on_step: OnStep) -> ConvertResult:
    import time

    destination = _artefact(contract, options, ".onnx")
    controls = read_op_controls(options.keep_dtype, options.modify_mixlist, options.customize_dtypes)
    notes = ignored_controls(controls, options.precision_mode)
    aipp, aipp_file, aipp_text = _aipp(contract, options, destination)
    fp16_nodes = parse_input_fp16_nodes(options.input_fp16_nodes, contract.inputs)
    output_types = parse_output_type(options.output_type, contract.outputs)
    check_output_types(output_types)
    request = gear_request(options)
    # A dynamic pb with no dynamic option still converts for the stand-in (which runs any shape); with one, the
    # stand-in takes exactly what the om would, so ATC's checks hold here too.
    gears = check_dynamic(contract.inputs, request, input_format=options.input_format.upper(),
                          aipp=options.aipp is not None, soc_version=options.soc_version or ASSUMED_SOC_VERSION,
                          soc_assumed=not options.soc_version) if request.given() else None
    ignored = _atc_only(options)
    on_step(f"reading {contract.pb_path}")
    # tf2onnx runs TensorFlow's graph optimizer, whose constant folding would run a ReadFile of a constant path
    graph_def = read_graph_def(contract.pb_path, HostOpPolicy.of(options.allow_host_ops))
    on_step("planning each op's precision from the operator table")
    prepared = prepare(contract, options, graph_def, controls, target="onnx")
    if options.dry_run:
        check_opset(options.opset)
        return ConvertResult(contract=contract, target="onnx", artefact=destination, target_reason=reason,
                             dry_run=True, ignored=ignored, notes=notes, aipp_file=aipp_file, plan=prepared.plan,
                             findings=prepared.lines)
    start = time.monotonic()
    conversion = convert_to_onnx(
        contract.pb_path, graph_def, contract.inputs, contract.outputs, destination,
        opset=options.opset, precision_mode=options.precision_mode, input_fp16_nodes=fp16_nodes,
        output_types=output_types, aipp=aipp, op_controls=controls, plan=prepared.plan, on_step=on_step,
    )
    _write_aipp(aipp_file, aipp_text)
    settings = conversion.settings()
    settings.update({"input_fp16_nodes": options.input_fp16_nodes, "output_type": options.output_type,
                     **gear_settings(options), "ignored_options": list(ignored),
                     "keep_dtype": str(options.keep_dtype or ""), "modify_mixlist": str(options.modify_mixlist or ""),
                     "customize_dtypes": str(options.customize_dtypes or ""),
                     "op_control_files": dict(controls.texts)})
    _with_aipp(settings, options, aipp, aipp_file, contract.folder)
    converted = ConvertedInfo(
        target="onnx", path=_relative(destination, contract.folder), sha256=sha256_file(destination),
        inputs=conversion.inputs, outputs=conversion.outputs, soc_version=options.soc_version,
        precision_mode=conversion.precision_mode, command=(), settings=settings,
        precision_plan=prepared.plan.to_json() if prepared.plan is not None else None, gears=gears,
    )
    saved = contract.with_converted(converted).save()
    return ConvertResult(contract=saved, target="onnx", artefact=destination, target_reason=reason,
                         ignored=ignored, notes=notes, seconds=time.monotonic() - start, aipp_file=aipp_file,
                         plan=prepared.plan, findings=prepared.lines)
