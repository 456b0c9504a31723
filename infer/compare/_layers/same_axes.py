"""Where the layout tracking restarts: TF tensors TensorFlow and the ONNX model compute in the same axes although
neither side's tracking says so.

Both trackings count axes from the graph inputs (`infer.compare._layers.layouts`, `tf_frames`), so after an op that
regroups or contracts axes of a transposed tensor (a multi-head attention's BatchMatMul of [B,H,S,D] heads, the
Reshape back to [B*S,W]) each gives up, and everything after it is `layout unknown`: a BERT's attention scores, mask
add and softmax were never compared. Yet tf2onnx converts each TF op to ONNX ops computing the TF op in TF's axes
from inputs in TF's axes: where the ONNX node tf2onnx named after the TF op reads exactly the TF op's inputs, each in
TF's layout (relative to its own TF tensor), or a Transpose of the tensor a TF Transpose it merged away read (the
key's transpose and MatMul's adj_y in one), and the shapes agree, its output is the TF tensor in TF's axes. Both
trackings then restart there (`starts` and `restarts`), and what follows is counted from its axes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from binio.spec import node_name
from infer.compare._layers.layouts import Layout, Permutation, Shape, identity
from infer.compare._layers.onnx_graph import OnnxGraph, OnnxNode

_TRANSPOSES = ("Transpose", "ConjugateTranspose")


class GraphTensorLike(Protocol):
    """What is read of a TF tensor (`infer.compare._layers.tensors.GraphTensor`)."""

    @property
    def name(self) -> str: ...
    @property
    def op_type(self) -> str: ...
    @property
    def inputs(self) -> tuple[str, ...]: ...
    @property
    def is_float(self) -> bool: ...
    @property
    def shape(self) -> tuple[int | None, ...] | None: ...


def same_axes(tensors: Sequence[GraphTensorLike], graph: OnnxGraph, layouts: Mapping[str, Layout],
              stand_ins: Mapping[str, str], shapes: Mapping[str, Shape]) -> dict[str, str]:
    """TF tensor -> its ONNX tensor, for each tensor whose layout neither side knows but both compute in the same
    axes (see above). `layouts`: each ONNX tensor's layout relative to its TF tensor."""
    by_name = {t.name: t for t in tensors}
    found: dict[str, str] = {}
    for tensor in tensors:
        onnx_name = stand_ins.get(tensor.name, tensor.name)
        node = _computed_by(graph, onnx_name)
        layout = layouts.get(onnx_name)
        if node is None or layout is None or layout.perm is not None or node.name != node_name(tensor.name):
            continue
        shape = shapes.get(onnx_name)
        if tensor.shape is None or shape is None or tuple(shape) != tuple(tensor.shape):
            continue
        read = [name for name in node.inputs if name and name not in graph.constants]
        if _reads_tf_inputs(tensor, read, by_name, graph, layouts, stand_ins):
            found[tensor.name] = onnx_name
    return found


def _computed_by(graph: OnnxGraph, name: str) -> OnnxNode | None:
    """The node computing `name`, through the fp16 emulation's Cast pair after it (not through a Transpose)."""
    node = graph.producer.get(name)
    while node is not None and node.op_type == "Cast" and node.inputs and node.name.startswith(name):
        node = graph.producer.get(node.inputs[0])
    return node


def _in_tf_layout(name: str, layouts: Mapping[str, Layout]) -> bool:
    layout = layouts.get(name)
    return layout is not None and layout.perm is not None and layout.perm == identity(len(layout.perm))


def _reads_tf_inputs(tensor: GraphTensorLike, read: list[str], by_name: Mapping[str, GraphTensorLike],
                     graph: OnnxGraph, layouts: Mapping[str, Layout], stand_ins: Mapping[str, str]) -> bool:
    """Whether the ONNX node reads each float input of the TF op in TF's layout: the ONNX tensor carrying its name,
    or, for a TF Transpose tf2onnx merged into one of its own, a Transpose of what that Transpose read."""
    wanted: list[str] = []  # the ONNX tensors read directly
    merged: list[str] = []  # what a merged-away TF Transpose read, read through an ONNX Transpose
    for name in tensor.inputs:
        source = by_name.get(name)
        if source is None or not source.is_float:
            continue
        onnx_name = stand_ins.get(name, name)
        if onnx_name in graph.producer or onnx_name in graph.inputs:
            if not _in_tf_layout(onnx_name, layouts):
                return False
            wanted.append(onnx_name)
        elif source.op_type in _TRANSPOSES and source.inputs:
            before = stand_ins.get(source.inputs[0], source.inputs[0])
            if not _in_tf_layout(before, layouts):
                return False
            merged.append(before)
        else:
            return False
    if not wanted and not merged:
        return False
    for name in read:
        while name not in wanted and name not in merged:
            producer = graph.producer.get(name)
            if producer is None or producer.op_type != "Cast" or not producer.inputs:
                break
            name = producer.inputs[0]  # the fp16 emulation's Cast pair
        if name in wanted:
            continue
        producer = graph.producer.get(name)
        if producer is None or producer.op_type != "Transpose" or not producer.inputs or \
                producer.inputs[0] not in merged:
            return False
    return True


def restarted(found: Mapping[str, str], shapes: Mapping[str, Shape]) -> dict[str, Permutation]:
    """The ONNX tensors of `found` in TF's layout, as `track_layouts`' starts."""
    return {onnx_name: identity(len(shapes[onnx_name])) for onnx_name in found.values()}
