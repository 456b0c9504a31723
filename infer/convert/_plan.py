"""`infer convert`'s contract and options turned into one `atc_wrap.plan.ConversionPlan`, before anything is written:
each option read once and every refusal made here, in one order for both targets (ATC's om and the ONNX Runtime
stand-in). The chosen target; the model's inputs (one batch must fit in memory); the converted model's path; the
chip; --input-fp16-nodes and --output-type against the contract's tensors; the dynamic options against its shapes
(ATC's rules, `atc_wrap.atc.dynamic_shapes`); AIPP's config; the per-op control files, read; then the frozen pb, read
once: its nodes, the stand-in's opset, the controls against its nodes and op types, and the precision plan from the
chip's operator table (`atc_wrap.precision.plan`) with the pre-check read from it (`atc_wrap.precision.precheck`).
What needs no model (the mode, the target, the implmode, the input format, --modify-mixlist's mode) was checked when
the options were built (`ConvertOptions`).

The chip is --soc-version's, refused for either target where ATC would refuse it (a typo is caught on the
workstation, with the name it was likely meant to be; --allow-unknown-soc lets a chip newer than the list through).
The stand-in without one (or with one no table covers) plans for `atc_wrap.atc.soc.ASSUMED_SOC_VERSION` and says
why. What ATC could not build as asked (an op the mode or a per-op control needs in a dtype the chip has no
kernel for) is refused for both targets; an op ATC cannot convert at all is refused for an om and a warning for the
stand-in, which still runs it. `--allow-unsupported` goes on past both: the tables are a 2022 snapshot.
"""

from __future__ import annotations

from pathlib import Path

from atc_wrap.aipp.config import AippConfig
from atc_wrap.atc.command import input_format_for
from atc_wrap.atc.dynamic_shapes import GearRequest, check_dynamic, parse_shape_range
from atc_wrap.atc.run import find_atc
from atc_wrap.atc.soc import ASSUMED_SOC_VERSION, check_soc_version
from atc_wrap.errors import ConvertError
from atc_wrap.nodes import check_nodes_exist
from atc_wrap.plan import ConversionPlan
from atc_wrap.precision.modes import output_type_arg, parse_input_fp16_nodes, parse_output_type
from atc_wrap.precision.op_controls import OpControls, check_op_controls, ignored_controls, read_op_controls
from atc_wrap.precision.op_tables import OpTableError, op_table_for
from atc_wrap.precision.plan import PrecisionPlan, ascend_names, plan_precision, refuse_planned
from atc_wrap.precision.precheck import precheck
from atc_wrap.standin.convert import check_aipp_batch, check_output_types
from atc_wrap.standin.opset import check_opset
from atc_wrap.target import Target
from binio.graph_types import GraphDef
from binio.memory import check_fits
from binio.steps import OnStep, no_steps
from ckpt2pb.protobuf import HostOpPolicy, read_graph_def
from infer.contract import ModelContract
from infer.convert.options import ConvertOptions
from infer.model_aipp import AIPP_FILE, aipp_config_for
from infer.remote.options import remote_given


def plan_conversion(contract: ModelContract, options: ConvertOptions, *, on_step: OnStep = no_steps) -> ConversionPlan:
    """The plan of converting the contract's pb as `options` ask; raises (a `ConvertError`, one line) for the first
    thing ATC or the stand-in would refuse. `on_step` hears the steps that take time (reading the pb, planning)."""
    target, reason = choose_target(options.target, remote=remote_given(options.remote))
    _check_batch_fits(contract)
    om = target == "om"
    artefact = _artefact(contract, options, f".{target}")
    if om:
        chip, assumed = check_soc_version(options.soc_version, allow_unknown=options.allow_unknown_soc), False
    else:  # the stand-in refuses what ATC would: a typo is caught on the workstation, not on the server
        asked = check_soc_version(options.soc_version, allow_unknown=options.allow_unknown_soc, required=False)
        chip, assumed = asked or ASSUMED_SOC_VERSION, not asked
    fp16_inputs = parse_input_fp16_nodes(options.input_fp16_nodes, contract.inputs)
    output_types = parse_output_type(options.output_type, contract.outputs)
    if not om:
        check_output_types(output_types)
    request = gear_request(options)
    # A dynamic pb with no dynamic option still converts for the stand-in (which runs any shape); with one, the
    # stand-in takes exactly what the om would, so ATC's checks hold there too.
    gears = check_dynamic(contract.inputs, request, input_format=options.input_format or "",
                          aipp=options.aipp is not None, soc_version=chip, soc_assumed=assumed) \
        if om or request.given() else None
    aipp, aipp_file, aipp_text = _aipp(contract, options, artefact)
    if aipp is not None and not om:
        check_aipp_batch(contract.inputs, aipp)
    if om and options.fusion_switch_file is not None and not Path(options.fusion_switch_file).is_file():
        raise ConvertError(f"--fusion-switch-file {options.fusion_switch_file}: no such file")
    controls = read_op_controls(options.keep_dtype, options.modify_mixlist, options.customize_dtypes)
    on_step(f"reading {contract.pb_path}")
    # tf2onnx runs TensorFlow's graph optimizer, whose constant folding would run a ReadFile of a constant path
    graph_def = read_graph_def(contract.pb_path, HostOpPolicy.of(options.allow_host_ops))
    pb = contract.pb_path.absolute()
    check_nodes_exist(graph_def, pb, contract.inputs, contract.outputs)
    opset = None if om else check_opset(options.opset)
    on_step("planning each op's precision from the operator table")
    precision, findings, chip, assumed = _precision(target, options, graph_def, pb, controls, fp16_inputs, chip,
                                                    assumed)
    return ConversionPlan(
        target=target, reason=reason, pb=pb, graph_def=graph_def, artefact=artefact, inputs=contract.inputs,
        outputs=contract.outputs, soc_version=options.soc_version, chip=chip, chip_assumed=assumed,
        precision_mode=options.precision_mode,
        fp16_inputs=fp16_inputs, output_type=output_type_arg(options.output_type), output_types=output_types,
        gear_request=request, gears=gears, input_format=input_format_for(options.input_format, gears, contract.inputs),
        implmode=options.op_select_implmode, fusion_switch_file=_absolute(options.fusion_switch_file),
        keep_dtype=_absolute(options.keep_dtype), modify_mixlist=_absolute(options.modify_mixlist),
        customize_dtypes=_absolute(options.customize_dtypes), controls=controls, precision=precision,
        findings=findings, aipp=aipp, aipp_file=aipp_file, aipp_text=aipp_text, extra_args=options.atc_args,
        opset=opset, ignored=_ignored(target, options), notes=ignored_controls(controls, options.precision_mode),
    )


def choose_target(asked: Target | None, *, remote: bool = False) -> tuple[Target, str]:
    """The target and one plain line saying why: om where ATC is found (or on the Ascend host `remote` says is
    given; ConvertOptions refuses --host with --target onnx), else the ONNX stand-in."""
    if asked is not None:
        return asked, f"target {asked}, as asked"
    if remote:
        return "om", "an Ascend host is given (--host): converting to om with ATC there"
    atc = find_atc()
    if atc is None:
        return "onnx", "ATC not found: converting to the ONNX Runtime stand-in (--target om to insist)"
    return "om", f"ATC found at {atc}: converting to om"


def gear_request(options: ConvertOptions) -> GearRequest:
    """The dynamic options given, parsed (a shape range's syntax refused here, naming --shape-range)."""
    ranges = parse_shape_range(options.shape_range, "--shape-range") if options.shape_range.strip() else ()
    return GearRequest(dynamic_batch=options.dynamic_batch, dynamic_image_size=options.dynamic_image_size,
                       dynamic_dims=options.dynamic_dims, shape_range=ranges)


def _check_batch_fits(contract: ModelContract) -> None:
    """Refuses a model one batch of whose inputs cannot be held in memory: nothing after convert could run it."""
    specs = [s.with_shape(tuple(1 if d is None else d for d in s.shape)) for s in contract.inputs]
    check_fits(sum(s.nbytes() for s in specs),
               f"{contract.path}: one batch of the inputs " + ", ".join(s.describe() for s in specs),
               hint="re-freeze with a smaller --batch or fixed shapes (infer freeze --inputs 'NAME[DIMS]')")


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


def _absolute(path: Path | None) -> Path | None:
    return None if path is None else Path(path).absolute()


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


def _ignored(target: Target, options: ConvertOptions) -> tuple[str, ...]:
    """The options given that mean nothing to `target`, by flag."""
    if target == "om":
        return ("--opset",) if options.opset is not None else ()
    given = {  # --soc-version (and --allow-unknown-soc) are the stand-in's too: they choose its plan's table
        "--input-format": options.input_format is not None,
        "--op-select-implmode": options.op_select_implmode is not None,
        "--fusion-switch-file": options.fusion_switch_file is not None,
        "--atc-arg": bool(options.atc_args),
    }
    return tuple(flag for flag, present in given.items() if present)


def _precision(target: Target, options: ConvertOptions, graph_def: GraphDef, pb: Path, controls: OpControls,
               fp16_inputs: tuple[str, ...], chip: str,
               assumed: bool) -> tuple[PrecisionPlan | None, tuple[str, ...], str, bool]:
    """(the precision plan, what convert says of it, the chip it is for, whether assumed), after the controls are
    checked against the pb. None for an om for a chip without a table (one newer than the tables)."""
    notes: tuple[str, ...] = ()
    asked = ""  # the chip given, where the plan is for another (no table for it)
    try:
        table = op_table_for(chip)
    except OpTableError as exc:
        if target == "om":
            check_op_controls(controls, graph_def, pb, emulated=False)
            return None, (f"no pre-check and no precision plan: {exc.message}",), chip, assumed
        # The stand-in needs a table to emulate: it plans for the assumed chip, and says so.
        notes = (f"no operator table for --soc-version {chip}: the stand-in plans for {ASSUMED_SOC_VERSION} instead",)
        asked, chip, assumed = chip, ASSUMED_SOC_VERSION, True
        table = op_table_for(chip)
    check_op_controls(controls, graph_def, pb, emulated=target == "onnx", ascend_types=ascend_names(graph_def, table))
    plan = refuse_planned(plan_precision(graph_def, table, options.precision_mode, chip=chip, chip_assumed=assumed,
                                         controls=controls, fp16_inputs=set(fp16_inputs), chip_asked=asked),
                          allow_unsupported=options.allow_unsupported)
    check = precheck(graph_def, table, chip, plan)
    if check.unconvertible and target == "om" and not options.allow_unsupported:
        raise ConvertError(f"{pb}: {check.refusal()}",
                           hint=f"{check.unconvertible[0].hint}; the table is of {check.table_date}, and a newer CANN "
                                "may convert it: --allow-unsupported runs ATC anyway")
    return plan, notes + plan.summary() + check.lines(), chip, assumed
