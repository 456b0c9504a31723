"""The ATC command line for a TensorFlow pb, built from the model's inputs and outputs and checked first.

Everything ATC would refuse after minutes of loading (a node not in the graph, E10016; a dynamic option with no
-1 dim, E10031, and the other gear and shape-range rules of `atc_wrap.dynamic_shapes`; an unknown chip or
precision mode) is refused here, before it runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from atc_wrap.aipp import AippConfig, aipp_input_spec
from atc_wrap.dynamic_shapes import DIMS, GearRequest, check_dynamic, gear_argv, input_shape_text
from atc_wrap.errors import ConvertError
from atc_wrap.nodes import check_nodes_exist
from atc_wrap.op_controls import (
    OpControls,
    check_mixlist_mode,
    check_op_controls,
    read_op_controls,
)
from atc_wrap.op_tables import OpTableError, op_table_for
from atc_wrap.precision import (
    DEFAULT_PRECISION_MODE,
    check_implmode,
    check_precision_mode,
    parse_input_fp16_nodes,
    parse_output_type,
)
from atc_wrap.precision_plan import ascend_names
from atc_wrap.soc import check_soc_version
from binio.gears import DynamicShape
from binio.spec import LAYOUTS, TensorSpec, output_index

FRAMEWORK_TENSORFLOW = "3"
# The options whose value is a file ATC reads (``--flag=PATH``), as `build_atc_command` writes them; ``--output`` is
# the om's path less ``.om``. What runs ATC elsewhere (an Ascend host over SSH) sends these files and names them there.
ATC_FILE_OPTIONS: tuple[str, ...] = ("--model", "--insert_op_conf", "--fusion_switch_file", "--keep_dtype",
                                     "--modify_mixlist", "--customize_dtypes")
ATC_OUTPUT_OPTION = "--output"


@dataclass(frozen=True)
class AtcOptions:
    """The user's ATC choices, in ATC's own syntaxes where it has one."""

    soc_version: str
    precision_mode: str = DEFAULT_PRECISION_MODE
    input_format: str = ""  # NHWC | NCHW | ND; "" takes it from the inputs' layout
    input_fp16_nodes: str = ""  # "a;b"
    output_type: str = ""  # FP32 | FP16 | UINT8 | "node:0:FP16;node2:1:FP32"
    gears: GearRequest = field(default_factory=GearRequest)  # --dynamic-batch, -image-size, -dims, --shape-range
    op_select_implmode: str = ""
    fusion_switch_file: Path | None = None
    keep_dtype: Path | None = None
    modify_mixlist: Path | None = None
    customize_dtypes: Path | None = None
    extra_args: tuple[str, ...] = ()
    allow_unknown_soc: bool = False
    insert_op_conf: Path | None = None  # the AIPP config file (written before ATC runs)
    aipp: AippConfig | None = None  # its content: the om's AIPP input takes uint8 images of the source size


@dataclass(frozen=True)
class AtcCommand:
    """A checked ATC argv and what the om it makes will take and give."""

    argv: tuple[str, ...]
    om: Path  # where ATC will write: --output + ".om"
    inputs: tuple[TensorSpec, ...]  # as the om takes them (fp16 for --input_fp16_nodes)
    outputs: tuple[TensorSpec, ...]  # as it gives them (per --output_type)
    input_format: str
    controls: OpControls  # the per-op control files as read (their texts go into model.json)
    gears: DynamicShape | None = None  # the shapes the om takes when built with gears or a shape range


def build_atc_command(
    atc: str, pb: Path, graph_def: Any, inputs: Sequence[TensorSpec], outputs: Sequence[TensorSpec], om: Path,
    options: AtcOptions,
) -> AtcCommand:
    """The argv for `atc` converting `pb` to `om` (which must end in .om), after every check ATC would make.
    `graph_def` is the pb as read by the caller (the TensorFlow side owns reading it), for the node checks."""
    soc = check_soc_version(options.soc_version, allow_unknown=options.allow_unknown_soc)
    mode = check_precision_mode(options.precision_mode)
    implmode = check_implmode(options.op_select_implmode)
    fp16_nodes = parse_input_fp16_nodes(options.input_fp16_nodes, inputs)
    output_types = parse_output_type(options.output_type, outputs)
    gears = check_dynamic(inputs, options.gears, input_format=options.input_format.upper(),
                          aipp=options.aipp is not None, soc_version=soc)
    # ATC's --dynamic_dims pages pair it with --input_format ND (a guess that it is needed; the examples all give it).
    input_format = _input_format(options.input_format or ("ND" if gears and gears.kind == DIMS else ""), inputs)
    check_nodes_exist(graph_def, pb, inputs, outputs)
    files = {"--fusion-switch-file": options.fusion_switch_file, "--keep-dtype": options.keep_dtype,
             "--modify-mixlist": options.modify_mixlist, "--customize-dtypes": options.customize_dtypes}
    for flag, path in files.items():
        if path is not None and not Path(path).is_file():
            raise ConvertError(f"{flag} {path}: no such file")
    check_mixlist_mode(options.modify_mixlist, mode)
    controls = read_op_controls(options.keep_dtype, options.modify_mixlist, options.customize_dtypes)
    check_op_controls(controls, graph_def, pb, mode, emulated=False, ascend_types=_ascend_types(graph_def, soc))

    argv = [
        atc,
        f"--model={pb}",
        f"--framework={FRAMEWORK_TENSORFLOW}",
        f"--output={om.with_suffix('')}",
        f"--soc_version={soc}",
        f"--input_shape={input_shape_text(gears, inputs)}",
        f"--input_format={input_format}",
        f"--out_nodes={out_nodes_arg(outputs)}",
        f"--precision_mode={mode}",
    ]
    if fp16_nodes:
        argv.append(f"--input_fp16_nodes={';'.join(fp16_nodes)}")
    if output_types:
        argv.append(f"--output_type={_output_type_arg(options.output_type)}")
    argv.extend(gear_argv(gears))
    if implmode:
        argv.append(f"--op_select_implmode={implmode}")
    if options.fusion_switch_file is not None:
        argv.append(f"--fusion_switch_file={options.fusion_switch_file}")
    if options.keep_dtype is not None:
        argv.append(f"--keep_dtype={options.keep_dtype}")
    if options.modify_mixlist is not None:
        argv.append(f"--modify_mixlist={options.modify_mixlist}")
    if options.customize_dtypes is not None:
        argv.append(f"--customize_dtypes={options.customize_dtypes}")
    if options.insert_op_conf is not None:
        argv.append(f"--insert_op_conf={options.insert_op_conf}")
    argv.extend(options.extra_args)
    shapes = dict(gears.inputs) if gears is not None else {}  # a shape range may fix an unknown dim
    taken = tuple((s.with_dtype("float16") if s.node in fp16_nodes else s).with_shape(shapes.get(s.name, s.shape))
                  for s in inputs)
    if options.aipp is not None:
        rank = options.aipp.related_input_rank
        taken = tuple(aipp_input_spec(s, options.aipp) if i == rank else s for i, s in enumerate(taken))
    return AtcCommand(
        argv=tuple(argv), om=om,
        inputs=taken,
        outputs=tuple(_typed_output(s, output_types) for s in outputs),
        input_format=input_format, controls=controls, gears=gears,
    )


def _ascend_types(graph_def: Any, soc: str) -> frozenset[str]:
    """The Ascend op types the pb's TF types become on `soc`, which a control file's OpType:: may name; none for
    a chip without an operator table."""
    try:
        return ascend_names(graph_def, op_table_for(soc))
    except OpTableError:
        return frozenset()


def out_nodes_arg(outputs: Sequence[TensorSpec]) -> str:
    """``probs:0;boxes:1`` in the contract's order."""
    return ";".join(f"{spec.node}:{output_index(spec.name)}" for spec in outputs)


def _output_type_arg(text: str) -> str:
    body = text.strip()
    if ":" not in body:
        return body.upper()
    parts = [p.strip() for p in body.split(";") if p.strip()]
    return ";".join(f"{p.rsplit(':', 1)[0]}:{p.rsplit(':', 1)[1].strip().upper()}" for p in parts)


def _typed_output(spec: TensorSpec, output_types: Mapping[str, str]) -> TensorSpec:
    kind = output_types.get(spec.name)
    return spec.with_dtype(kind) if kind else spec


def _input_format(asked: str, inputs: Sequence[TensorSpec]) -> str:
    if asked:
        value = asked.upper()
        if value not in LAYOUTS:
            raise ConvertError(f"--input-format {asked!r}: expected one of {', '.join(LAYOUTS)}")
        return value
    layouts = [spec.layout for spec in inputs if spec.layout in ("NHWC", "NCHW")]
    return layouts[0] if layouts else "ND"
