"""The precision plan held to what ATC really built: the public (pb, om) pairs of Ascend's model zoos, fetched by
scripts/fetch_ascend_fixtures.py (skipped without them). Each om records, per op, the dtypes of its inputs and
outputs; the fusion map names the TF nodes each op computes (infer.compare._npu.fusion_map). For every float op the
plan places on AI Core, the om op computing it must take the planned input dtype and give the planned output dtype
(where the om's tensor is a float: ArgMax gives an index, an AI CPU op reads a shape).

Pairs: the AutoEncoder (hh.pb, hh_om.om: ATC 1.80, --soc_version=Ascend310, no --precision_mode: force_fp16) and the
A3C Pong model (a3c_pong_model.pb with both its oms: ATC 1.75's and the earlier one; Ascend310, force_fp16 by their
om_converter.sh). DD-NET's om has no public pb, but its two resizes show the kernel's own output dtype."""

from __future__ import annotations

from pathlib import Path

import pytest

from atc_wrap.ascend_files.om_model import OmOp, read_om
from atc_wrap.precision.op_tables import op_table_for
from atc_wrap.precision.plan import PlannedOp, plan_precision
from ckpt2pb.protobuf import read_graph_def
from infer.compare._npu.fusion_map import tf_nodes_of
from tests.real_files import needs_real_files, real_file

FLOATS = ("float16", "float32")


def _against_om(pb: Path, om_path: Path) -> tuple[list[tuple[PlannedOp, OmOp]], list[str]]:
    graph_def = read_graph_def(pb)
    plan = plan_precision(graph_def, op_table_for("Ascend310"), "force_fp16", chip="Ascend310")
    nodes = {node.name for node in graph_def.node}
    computed_by: dict[str, OmOp] = {}
    for op in read_om(om_path).ops:
        for node in tf_nodes_of(op, nodes):
            computed_by.setdefault(node, op)
    matched, differing = [], []
    for entry in plan.ops:
        op = computed_by[entry.node]
        matched.append((entry, op))
        given = op.input_descs[0].dtype if op.input_descs else ""
        gives = op.output_descs[0].dtype if op.output_descs else ""
        if entry.engine == "aicore" and given in FLOATS and given != entry.input_dtype:
            differing.append(f"{entry.node}: planned {entry.input_dtype} in, the om's {op.name} takes {given}")
        if entry.engine == "aicore" and gives in FLOATS and gives != entry.output_dtype:
            differing.append(f"{entry.node}: planned {entry.output_dtype} out, the om's {op.name} gives {gives}")
    return matched, differing


@needs_real_files("hh.pb", "hh_om.om")
def test_the_autoencoders_plan_is_what_atc_built() -> None:
    matched, differing = _against_om(real_file("hh.pb"), real_file("hh_om.om"))
    assert not differing, "\n".join(differing)
    assert len(matched) == 28
    kinds = {(entry.op_type, entry.engine, entry.dtype) for entry, _ in matched}
    # Conv2D (op_select_format: fp16 only on Ascend310), MatMulV2 and the fused element-wise ops in fp16; the
    # random op on AI CPU in fp32, as the om's FrameworkOp gives it
    assert ("Conv2D", "aicore", "float16") in kinds and ("MatMul", "aicore", "float16") in kinds
    assert ("RandomStandardNormal", "aicpu", "float32") in kinds
    random = next(op for entry, op in matched if entry.op_type == "RandomStandardNormal")
    assert (random.type, random.output_descs[0].dtype) == ("FrameworkOp", "float32")


@pytest.mark.parametrize("om", ["a3c_c735fee.om", "a3c_7761bb2.om"])
def test_the_a3c_plan_is_what_both_atcs_built(om: str) -> None:
    matched, differing = _against_om(real_file("a3c_pong_model.pb"), real_file(om))
    assert not differing, "\n".join(differing)
    assert len(matched) == 16
    arg_max = next((entry, op) for entry, op in matched if entry.op_type == "ArgMax")
    assert arg_max[1].type == "ArgMaxD" and arg_max[1].output_descs[0].dtype == "int32"  # an index: not compared


@needs_real_files("ddnet_out.om")
def test_ddnets_resizes_give_what_their_kernel_gives() -> None:
    """Both ResizeBilinearV2D ops of DD-NET's om take fp16 and give fp32 (then ATC casts back), which is what the
    Ascend310 table pairs fp16 with, and what the plan now gives the op (tests/atc_wrap/test_precision_plan.py)."""
    resizes = [op for op in read_om(real_file("ddnet_out.om")).ops if op.type == "ResizeBilinearV2D"]
    assert len(resizes) == 2
    for op in resizes:
        assert (op.input_descs[0].dtype, op.output_descs[0].dtype) == ("float16", "float32")
    kernel = op_table_for("Ascend310").aicore_kernel("ResizeBilinearV2D")
    assert kernel is not None and kernel.outputs_for("float16") == {"float32"}
