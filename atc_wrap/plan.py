"""One conversion, decided before anything runs (`ConversionPlan`): what `infer convert` turns a contract and its
options into (`infer.convert._plan.plan_conversion`), every option read and checked there once, against the frozen
pb where it names its nodes. ATC's command line (`atc_wrap.atc.command.atc_argv`) and the stand-in
(`atc_wrap.standin.convert.convert_to_onnx`) take it and check nothing; model.json's record of the conversion is
written from it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from atc_wrap.aipp.config import AippConfig
from atc_wrap.atc.dynamic_shapes import GearRequest
from atc_wrap.precision.modes import ImplMode, OutputType, PrecisionMode
from atc_wrap.precision.op_controls import OpControls
from atc_wrap.precision.plan import PrecisionPlan
from atc_wrap.target import Target
from binio.gears import DynamicShape
from binio.graph_types import GraphDef
from binio.layouts import Layout
from binio.spec import TensorSpec


@dataclass(frozen=True)
class ConversionPlan:
    """The conversion of one frozen pb to one target, as decided: the converters read it and decide nothing."""

    target: Target
    reason: str  # one plain line: why this target
    pb: Path  # the frozen pb, absolute
    graph_def: GraphDef = field(repr=False, compare=False)  # the pb as read, once (the TensorFlow side reads it)
    artefact: Path  # the converted model written (.om, .onnx), absolute
    inputs: tuple[TensorSpec, ...]  # the frozen pb's, in the contract's order
    outputs: tuple[TensorSpec, ...]
    soc_version: str  # --soc-version as given ("" for none): what model.json records
    chip: str  # ATC's --soc_version; the chip the stand-in plans for
    chip_assumed: bool  # no --soc-version given (or none the tables cover): `chip` is the stand-in's
    precision_mode: PrecisionMode
    fp16_inputs: tuple[str, ...] = ()  # input nodes the converted model takes as float16 (--input_fp16_nodes)
    output_type: str = ""  # ATC's --output_type as given, its types upper-cased ("FP16", "probs:0:FP16")
    output_types: Mapping[str, OutputType] = field(default_factory=dict)  # output tensor -> its type, from it
    gear_request: GearRequest = field(default_factory=GearRequest)  # the dynamic options as given
    gears: DynamicShape | None = None  # the shapes the converted model takes (None: static, or any for the stand-in)
    input_format: Layout = "ND"  # ATC's --input_format (the inputs' layout unless given)
    implmode: ImplMode | None = None  # ATC's --op_select_implmode; None: ATC's default
    fusion_switch_file: Path | None = None  # ATC's files, absolute
    keep_dtype: Path | None = None
    modify_mixlist: Path | None = None
    customize_dtypes: Path | None = None
    controls: OpControls = field(default_factory=OpControls)  # the three control files, read and checked
    precision: PrecisionPlan | None = None  # each op's dtype on the chip; None for a chip without operator table
    findings: tuple[str, ...] = ()  # what convert says of the plan: its summary, then the pre-check's findings
    aipp: AippConfig | None = None  # AIPP's config: the model then takes uint8 images at its input
    aipp_file: Path | None = None  # where aipp.cfg is written (ATC's --insert_op_conf), beside the model
    aipp_text: str = ""  # aipp.cfg as written: a hand-written file as it is, a generated one with what it came from
    extra_args: tuple[str, ...] = ()  # --atc-arg, as given
    opset: int | None = None  # the stand-in's ONNX opset (None for an om)
    ignored: tuple[str, ...] = ()  # the options given that mean nothing to this target, by flag
    notes: tuple[str, ...] = ()  # controls given that change nothing here, and why (`ignored_controls`)

    def fp16_input_tensors(self) -> frozenset[str]:
        return frozenset(spec.name for spec in self.inputs if spec.node in set(self.fp16_inputs))

    def fp16_output_tensors(self) -> frozenset[str]:
        return frozenset(name for name, kind in self.output_types.items() if kind == "FP16")
