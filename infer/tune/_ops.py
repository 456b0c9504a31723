"""The ops a keep_dtype file can name usefully: TF nodes of the frozen pb, in graph order, that compute a float
tensor from the inputs and have ONNX nodes of their own in the stand-in (fused ones have nothing to keep), each
with its share of the model's work (FLOPs, estimated from static shapes) and parameters (float weights it reads).
"""

from __future__ import annotations

import math
from collections.abc import Set
from dataclasses import dataclass
from typing import Any

from atc_wrap.precision.plan import PrecisionPlan
from atc_wrap.standin.emulation import tf_origin
from ckpt2pb.protobuf import HostOpPolicy, read_graph_def
from infer.contract import ModelContract

_PRODUCTS = frozenset({"MatMul", "BatchMatMul", "BatchMatMulV2", "BatchMatMulV3"})
_CONVOLUTIONS = frozenset({"Conv2D", "Conv3D", "DepthwiseConv2dNative", "Conv2DBackpropInput"})
_PASS_THROUGH = frozenset({"Identity", "IdentityN", "Snapshot"})
# A reduction does one operation per element it reads, not per element it writes.
_REDUCTIONS = frozenset({"Sum", "Mean", "Prod", "Max", "Min", "L2Loss", "EuclideanNorm"})


@dataclass(frozen=True)
class TunableOp:
    name: str
    op_type: str
    flops: int  # multiply-adds count twice; an element-wise op one per output element
    params: int  # elements of the float constants it reads (weights)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "op_type": self.op_type, "flops": self.flops, "params": self.params}


def _elements(shape: Any) -> int:
    dims = shape.as_list() if shape.rank is not None else None
    if dims is None or any(d is None for d in dims):
        return 0
    return int(math.prod(dims))


def _constant_elements(tensor: Any) -> int:
    """The size of a float constant behind `tensor` (through Identity), 0 when it is not one."""
    op = tensor.op
    while op.type in _PASS_THROUGH and op.inputs:
        op = op.inputs[0].op
    if op.type != "Const" or not tensor.dtype.is_floating:
        return 0
    return _elements(tensor.shape)


def _flops(op: Any) -> int:
    outputs = sum(_elements(t.shape) for t in op.outputs if t.dtype.is_floating)
    if op.type in _CONVOLUTIONS and len(op.inputs) > 1:
        kernel = op.inputs[1].shape.as_list() if op.inputs[1].shape.rank is not None else None
        if kernel and all(d is not None for d in kernel):
            per_output = math.prod(kernel[:-2]) * (kernel[-2] if op.type != "DepthwiseConv2dNative" else 1)
            if op.type == "Conv2DBackpropInput":
                per_output = math.prod(kernel[:-2]) * kernel[-1]
            return 2 * outputs * int(per_output)
    if op.type in _PRODUCTS and len(op.inputs) > 1:
        a = op.inputs[0].shape.as_list() if op.inputs[0].shape.rank is not None else None
        if a and a[-1] is not None:
            inner = a[-2] if op.get_attr("transpose_a" if op.type == "MatMul" else "adj_x") else a[-1]
            return 2 * outputs * int(inner or 0)
    if op.type in _REDUCTIONS and op.inputs:
        return _elements(op.inputs[0].shape)
    return outputs


def tunable_ops(contract: ModelContract, onnx_nodes: Set[str]) -> tuple[TunableOp, ...]:
    """The pb's float ops computed from the inputs, in graph order, that have nodes among `onnx_nodes` (the
    stand-in's node names, attributed to TF nodes as the emulation attributes them)."""
    import tensorflow as tf

    contract.check_pb_unchanged()
    graph_def = read_graph_def(contract.pb_path, HostOpPolicy.INERT)  # shapes only, nothing runs
    names = {node.name for node in graph_def.node}
    owned = {tf_origin(name, names) for name in onnx_nodes} - {None}
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.import_graph_def(graph_def, name="")  # shapes as freeze fixed them (an unknown batch: 0 FLOPs)
    fed = {spec.name for spec in contract.inputs}
    found = []
    for op in graph.get_operations():
        if op.type == "Placeholder" or not any(t.name in fed for t in op.inputs):
            continue
        fed.update(t.name for t in op.outputs)
        if op.name not in owned or not any(t.dtype.is_floating for t in op.outputs):
            continue
        found.append(TunableOp(name=op.name, op_type=op.type, flops=_flops(op),
                               params=sum(_constant_elements(t) for t in op.inputs)))
    return tuple(found)


def keepable(ops: tuple[TunableOp, ...], plan: PrecisionPlan | None) -> tuple[tuple[TunableOp, ...],
                                                                            tuple[TunableOp, ...]]:
    """(the ops a keep_dtype file can change on the plan's chip, those it cannot): an op the plan already runs in
    fp32 gains nothing, and one whose AI Core kernel has no fp32 ATC cannot keep (convert refuses it). Without a
    plan (a model converted before plans), every op is a candidate."""
    if plan is None:
        return ops, ()
    planned = {entry.node: entry for entry in plan.ops}
    chosen, left = [], []
    for op in ops:
        entry = planned.get(op.name)
        if entry is not None and entry.computes_fp16 and entry.can_keep_fp32:
            chosen.append(op)
        elif entry is not None and entry.computes_fp16:
            left.append(op)
    return tuple(chosen), tuple(left)
