"""ATC's command line for a TensorFlow pb, built from the conversion's plan (`atc_wrap.plan.ConversionPlan`), which
holds every choice already checked: what ATC would refuse after minutes of loading (a node not in the graph, E10016;
a dynamic option with no -1 dim, E10031, and the other gear and shape-range rules of `atc_wrap.atc.dynamic_shapes`;
an unknown chip or precision mode) was refused making it. The argv is a plain list of words: `atc_wrap.atc.run`
runs it here, and it can be run anywhere ATC is.
"""

from __future__ import annotations

from collections.abc import Sequence

from atc_wrap.aipp.config import aipp_input_spec
from atc_wrap.atc.dynamic_shapes import DIMS, gear_argv, input_shape_text
from atc_wrap.plan import ConversionPlan
from binio.gears import DynamicShape
from binio.layouts import Layout
from binio.spec import TensorSpec, output_index

FRAMEWORK_TENSORFLOW = "3"
# The options whose value is a file ATC reads (``--flag=PATH``), as `atc_argv` writes them; ``--output`` is the om's
# path less ``.om``. What runs ATC elsewhere (an Ascend host over SSH) sends these files and names them there.
ATC_FILE_OPTIONS: tuple[str, ...] = ("--model", "--insert_op_conf", "--fusion_switch_file", "--keep_dtype",
                                     "--modify_mixlist", "--customize_dtypes")
ATC_OUTPUT_OPTION = "--output"


def atc_argv(plan: ConversionPlan, atc: str) -> tuple[str, ...]:
    """The argv for `atc` converting the plan's pb to its om (`plan.artefact`, which ends in .om)."""
    argv = [
        atc,
        f"--model={plan.pb}",
        f"--framework={FRAMEWORK_TENSORFLOW}",
        f"--output={plan.artefact.with_suffix('')}",
        f"--soc_version={plan.chip}",
        f"--input_shape={input_shape_text(plan.gears, plan.inputs)}",
        f"--input_format={plan.input_format}",
        f"--out_nodes={out_nodes_arg(plan.outputs)}",
        f"--precision_mode={plan.precision_mode}",
    ]
    if plan.fp16_inputs:
        argv.append(f"--input_fp16_nodes={';'.join(plan.fp16_inputs)}")
    if plan.output_types:
        argv.append(f"--output_type={plan.output_type}")
    argv.extend(gear_argv(plan.gears))
    if plan.implmode:
        argv.append(f"--op_select_implmode={plan.implmode}")
    if plan.fusion_switch_file is not None:
        argv.append(f"--fusion_switch_file={plan.fusion_switch_file}")
    if plan.keep_dtype is not None:
        argv.append(f"--keep_dtype={plan.keep_dtype}")
    if plan.modify_mixlist is not None:
        argv.append(f"--modify_mixlist={plan.modify_mixlist}")
    if plan.customize_dtypes is not None:
        argv.append(f"--customize_dtypes={plan.customize_dtypes}")
    if plan.aipp_file is not None:
        argv.append(f"--insert_op_conf={plan.aipp_file}")
    argv.extend(plan.extra_args)
    return tuple(argv)


def om_inputs(plan: ConversionPlan) -> tuple[TensorSpec, ...]:
    """The inputs as the om will take them: float16 for --input_fp16_nodes, the shapes the gears or a shape range
    give (a range may fix an unknown dim), AIPP's uint8 images at its input."""
    shapes = dict(plan.gears.inputs) if plan.gears is not None else {}
    fp16 = set(plan.fp16_inputs)
    taken = tuple((s.with_dtype("float16") if s.node in fp16 else s).with_shape(shapes.get(s.name, s.shape))
                  for s in plan.inputs)
    if plan.aipp is not None:
        rank = plan.aipp.related_input_rank
        taken = tuple(aipp_input_spec(s, plan.aipp) if i == rank else s for i, s in enumerate(taken))
    return taken


def om_outputs(plan: ConversionPlan) -> tuple[TensorSpec, ...]:
    """The outputs as the om will give them: each in the type --output_type names for it."""
    return tuple(spec.with_dtype(plan.output_types[spec.name]) if spec.name in plan.output_types else spec
                 for spec in plan.outputs)


def out_nodes_arg(outputs: Sequence[TensorSpec]) -> str:
    """``probs:0;boxes:1`` in the contract's order."""
    return ";".join(f"{spec.node}:{output_index(spec.name)}" for spec in outputs)


def input_format_for(asked: Layout | None, gears: DynamicShape | None, inputs: Sequence[TensorSpec]) -> Layout:
    """ATC's --input_format: the one asked, else ND for --dynamic_dims (ATC's pages pair them; a guess that it is
    needed, the examples all give it), else the first image input's layout, else ND."""
    if asked is not None:
        return asked
    if gears is not None and gears.kind == DIMS:
        return "ND"
    layouts = [spec.layout for spec in inputs if spec.layout in ("NHWC", "NCHW")]
    return "ND" if not layouts else "NCHW" if layouts[0] == "NCHW" else "NHWC"
