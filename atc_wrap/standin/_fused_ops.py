"""Which TF op an ONNX node computes where tf2onnx fused two TF ops into one node.

tf2onnx folds a BiasAdd into the convolution or product before it: one ONNX Conv (or Gemm) named after the BiasAdd
computes both, and the Conv2D keeps no ONNX node of its own. ATC fuses them the same way (the bias goes into the cube
op's accumulation), so the fused node reads its inputs as the first TF op of the pair does and stores its output as the
last one does: under force_fp32 a Conv2D+BiasAdd takes fp16 in (the Conv2D's rule) and gives fp32 out (the BiasAdd's). A
fused node is recognised by its ONNX op type: one `atc_wrap.precision.op_types.ONNX_OPS_OF_TF` does not list for the TF
type it is named after, but lists for a TF op that node reads (through Identity) and that has no ONNX node of its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from typing import Any

from atc_wrap.precision.op_types import ONNX_OPS_OF_TF
from binio.graph_types import GraphDef

_PASS_THROUGH = frozenset({"Identity", "Snapshot", "StopGradient"})


def fused_first_ops(model: Any, graph_def: GraphDef, origin: Mapping[str, str | None]) -> dict[str, str]:
    """ONNX node name -> the TF node whose inputs it reads, for the nodes that compute two TF ops at once;
    `origin` is each ONNX node's TF node (`atc_wrap.standin.emulation.tf_origin`)."""
    tf_nodes = {node.name: node for node in graph_def.node}
    owned: Set[str] = {tf for tf in origin.values() if tf is not None}
    found: dict[str, str] = {}
    for node in model.graph.node:
        tf = origin.get(node.name)
        if tf is None or tf not in tf_nodes:
            continue
        listed = ONNX_OPS_OF_TF.get(tf_nodes[tf].op)
        if listed is None or node.op_type in listed:
            continue
        for source in _data_inputs(tf_nodes[tf], tf_nodes):
            if source.name not in owned and node.op_type in ONNX_OPS_OF_TF.get(source.op, ()):
                found[node.name] = source.name
                break
    return found


def _data_inputs(node: Any, tf_nodes: Mapping[str, Any]) -> list[Any]:
    found = []
    for name in node.input:
        if name.startswith("^"):
            continue
        source = tf_nodes.get(name.split(":", 1)[0])
        while source is not None and source.op in _PASS_THROUGH and source.input:
            source = tf_nodes.get(source.input[0].split(":", 1)[0])
        if source is not None:
            found.append(source)
    return found
