"""oms for a model's tensors, written by the independent writer (tests/atc_wrap/ascend_writer.py): the Data ops, the
fused ops with the fusion map's attributes and the NetOutput as ATC lays them out (after the real AutoEncoder om of
Ascend/ModelZoo-TensorFlow), with the dtypes, batch, gears, AIPP and header a test asks for."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from binio.dtypes import dtype
from binio.spec import TensorSpec
from tests.atc_wrap.ascend_writer import Desc, Op, model_def, om_bytes

CMDLINE = "/usr/local/Ascend/ascend-toolkit/latest/bin/atc.bin --model=model.pb --framework=3 --output=model"


@dataclass
class OmPlan:
    """What the om should say; defaults: the contract's dtypes and shapes, ATC 1.80 for Ascend310."""

    inputs: Sequence[TensorSpec]
    outputs: Sequence[TensorSpec]
    input_dtypes: dict[str, str] = field(default_factory=dict)  # tensor -> the om's dtype
    output_dtypes: dict[str, str] = field(default_factory=dict)
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)  # tensor -> the om's shape (-1: a gear dim)
    input_names: dict[str, str] = field(default_factory=dict)  # tensor -> the om's Data op name
    input_order: Sequence[str] = ()  # the tensors in the om's index order (default: the contract's)
    out_nodes: Sequence[str] | None = None  # attr_model_out_nodes_name (default: the outputs' tensor names)
    soc_version: str = "Ascend310"
    atc_version: str = "1.80.T15.0.B156"
    cmdline: str = CMDLINE
    version: int = 0x20000000
    encrypted: bool = False
    aipp: dict[str, dict[str, Any]] = field(default_factory=dict)  # tensor -> its Data op's aipp NamedAttrs
    batch_gears: Sequence[int] = ()
    fused: dict[str, Sequence[str]] = field(default_factory=dict)  # om op name -> the TF nodes fused into it


def _ge(name: str) -> int:
    return dtype(name).ge_enum


def _desc(name: str, shape: Sequence[int], layout: str) -> Desc:
    known = all(d >= 0 for d in shape)
    size = math.prod(shape) * dtype(name).itemsize if known else 0
    return Desc(_ge(name), tuple(shape), layout, layout, tuple(shape), size=size)


def _shape(plan: OmPlan, spec: TensorSpec) -> tuple[int, ...]:
    return plan.shapes.get(spec.name, tuple(-1 if d is None else d for d in spec.shape))


def om_ops(plan: OmPlan) -> list[Op]:
    order = list(plan.input_order) or [spec.name for spec in plan.inputs]
    ops = []
    for spec in plan.inputs:
        om_dtype = plan.input_dtypes.get(spec.name, spec.dtype)
        desc = _desc(om_dtype, _shape(plan, spec), "NHWC")
        attrs: dict[str, Any] = {"index": order.index(spec.name)}
        if spec.name in plan.aipp:
            attrs["aipp"] = plan.aipp[spec.name]
        ops.append(Op(plan.input_names.get(spec.name, spec.node), "Data", input_descs=[desc], output_descs=[desc],
                      attrs=attrs))
    for op_name, originals in plan.fused.items():
        out = Desc(_ge("float16"), (2, 1, 4, 4, 16), "NC1HWC0", "NHWC", (2, 4, 4, 16), origin_name=originals[-1],
                   origin_output_index=0)
        ops.append(Op(op_name, "Conv2D", inputs=[f"{plan.inputs[0].node}:0"], output_descs=[out],
                      attrs={"_datadump_original_op_names": list(originals)}))
    casts = []
    for index, spec in enumerate(plan.outputs):
        om_dtype = plan.output_dtypes.get(spec.name, spec.dtype)
        desc = _desc(om_dtype, _shape(plan, spec), "NHWC")
        ops.append(Op(f"trans_Cast_{index}", "Cast", output_descs=[desc]))
        casts.append(desc)
    if plan.batch_gears:
        gears = {f"_pred_value_{i}": [g] for i, g in enumerate(plan.batch_gears)}
        ops.append(Op("ascend_mbatch_shape_case", "Case", attrs={"_batch_num": len(plan.batch_gears),
                                                                 "mbatch_dynamic_type": 1, **gears}))
    ops.append(Op("Node_Output", "NetOutput", inputs=[f"trans_Cast_{i}:0" for i in range(len(plan.outputs))],
                  input_descs=casts, src_names=[f"trans_Cast_{i}" for i in range(len(plan.outputs))],
                  src_indexes=[0] * len(plan.outputs)))
    return ops


def write_om(path: Path, plan: OmPlan) -> Path:
    attrs: dict[str, Any] = {"atc_version": plan.atc_version, "opp_version": plan.atc_version,
                             "framework_type": "TensorFlow", "target_type": "MINI"}
    if plan.soc_version:
        attrs["soc_version"] = plan.soc_version
    if plan.cmdline:
        attrs["atc_cmdline"] = plan.cmdline
    out_nodes = [spec.name for spec in plan.outputs] if plan.out_nodes is None else list(plan.out_nodes)
    if out_nodes:
        attrs["attr_model_out_nodes_name"] = out_nodes
    name = path.stem
    definition = model_def(om_ops(plan), attrs, name=name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(om_bytes([(0, definition), (1, b"\x00" * 64), (3, b"kernels"), (2, b"tasks")],
                              version=plan.version, name=name, encrypted=plan.encrypted))
    return path
