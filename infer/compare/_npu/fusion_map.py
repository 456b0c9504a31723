"""Which TensorFlow tensor each output of an om op holds, read from the om's fusion map, as msaccucmp reads it.

An op names the TF nodes it computes in `_datadump_original_op_names`; each output names the TF node and output
index it holds in `_datadump_origin_name` and `_datadump_origin_output_index`, with the origin format and shape
its device layout turns back into. An op without those attributes that kept a TF node's name (the real AutoEncoder
om's RandomStandardNormal, a Reshape ATC left alone) computes that node, output i holding ``node:i``; msaccucmp
takes an op without the attribute for its own name too (fusion_rule_parser.py). The others (ATC's TransData, Cast,
weights) compute no TF tensor and are not compared.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from atc_wrap.ascend_files.om_model import OmModel, OmOp, OmTensor

_NOT_COMPUTED = frozenset({"Data", "AippData", "AnnData", "NetOutput", "Const", "Constant", "Variable"})


@dataclass(frozen=True)
class NpuOutput:
    """One output of an om op and the TF tensor it holds."""

    op_name: str
    op_type: str
    index: int
    tf_tensor: str
    fused_nodes: tuple[str, ...]  # the TF nodes the op computes
    tensor: OmTensor  # the om's descriptor: device format and shape, origin format and shape

    @property
    def origin_format(self) -> str:
        return self.tensor.origin_format or self.tensor.origin_dump_format


@dataclass(frozen=True)
class FusionMatch:
    """The om's ops against the TF graph."""

    outputs: dict[str, NpuOutput]  # TF tensor -> the first om output (in graph order) holding it
    computed_by: dict[str, OmOp]  # TF node -> the om op whose computation includes it
    unnamed: tuple[OmOp, ...]  # ops that compute no TF node (ATC's own), in graph order


def tf_nodes_of(op: OmOp, tf_nodes: Collection[str]) -> tuple[str, ...]:
    """The TF nodes `op` computes: its `_datadump_original_op_names`, else its own name if the pb has that node."""
    if op.original_op_names:
        return tuple(name for name in op.original_op_names if name)
    return (op.name,) if op.name in tf_nodes else ()


def _tf_tensor(op: OmOp, index: int, tensor: OmTensor, nodes: tuple[str, ...]) -> str:
    if tensor.origin_name:
        return f"{tensor.origin_name}:{tensor.origin_output_index or 0}"
    if len(nodes) == 1:  # an op of one TF node: output i is that node's output i, as msaccucmp counts it
        return f"{nodes[0]}:{index}"
    return ""


def match_fusion(om: OmModel, tf_nodes: Collection[str]) -> FusionMatch:
    """Every om op's outputs mapped to the TF tensors they hold, given the pb's node names."""
    outputs: dict[str, NpuOutput] = {}
    computed_by: dict[str, OmOp] = {}
    unnamed = []
    for op in om.ops:
        if op.type in _NOT_COMPUTED:
            continue
        nodes = tf_nodes_of(op, tf_nodes)
        if not nodes:
            unnamed.append(op)
            continue
        for node in nodes:
            computed_by.setdefault(node, op)
        for index, tensor in enumerate(op.output_descs):
            name = _tf_tensor(op, index, tensor, nodes)
            if name and name not in outputs:
                outputs[name] = NpuOutput(op.name, op.type, index, name, nodes, tensor)
    return FusionMatch(outputs=outputs, computed_by=computed_by, unnamed=tuple(unnamed))
