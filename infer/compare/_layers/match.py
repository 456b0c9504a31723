"""Whether the ONNX tensor that carries a TF tensor's name computes what the TF tensor computes.

tf2onnx keeps TF names where an op maps one to one, but a name can land on another computation: on BERT it
reordered the embedding additions and `bert/embeddings/add:0` named a different partial sum. A name is taken as a
match when the ONNX node that computes it (looking through the fp16 emulation's casts and tf2onnx's transposes)
is of a type that implements the TF op (fusions included: a BiasAdd may be a Conv or Gemm with its bias) and
reads the same matched tensors: its frontier, the nearest tensors upstream that are graph inputs or already
matched, equals the TF tensor's. A name that fails this is still a match when its values agree with TF's (the
probe); otherwise it is listed as unmatched with what ONNX computes there.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from infer.compare._layers.onnx_graph import SEE_THROUGH, OnnxGraph, OnnxNode

# TF op type -> the ONNX op types tf2onnx computes it with (a fused one included: the node that computes a TF
# op's result may also compute the op before it).
ONNX_OPS_FOR: dict[str, frozenset[str]] = {
    name: frozenset(types) for name, types in {
        "Conv2D": ("Conv",), "Conv3D": ("Conv",), "DepthwiseConv2dNative": ("Conv",),
        "Conv2DBackpropInput": ("ConvTranspose",), "Conv3DBackpropInputV2": ("ConvTranspose",),
        "BiasAdd": ("Add", "Conv", "ConvTranspose", "Gemm", "Sum"), "BiasAddV1": ("Add", "Conv", "Gemm"),
        "MatMul": ("MatMul", "Gemm"), "BatchMatMul": ("MatMul",), "BatchMatMulV2": ("MatMul",),
        "BatchMatMulV3": ("MatMul",),
        # tf2onnx folds a batch norm that follows a convolution into the Conv's weights and bias.
        "FusedBatchNorm": ("BatchNormalization", "Conv"), "FusedBatchNormV2": ("BatchNormalization", "Conv"),
        "FusedBatchNormV3": ("BatchNormalization", "Conv"),
        "Relu": ("Relu",), "Relu6": ("Clip", "Relu"), "LeakyRelu": ("LeakyRelu",), "Elu": ("Elu",),
        "Selu": ("Selu",), "Sigmoid": ("Sigmoid",), "Tanh": ("Tanh",), "Softplus": ("Softplus",),
        "Softsign": ("Softsign",), "Softmax": ("Softmax",), "LogSoftmax": ("LogSoftmax",),
        "Add": ("Add", "Sum"), "AddV2": ("Add", "Sum"), "AddN": ("Sum", "Add"), "Sub": ("Sub",), "Mul": ("Mul",),
        "RealDiv": ("Div", "Mul"), "Div": ("Div", "Mul"),  # x / c becomes x * (1/c)
        "Square": ("Mul", "Pow"), "SquaredDifference": ("Mul", "Pow"), "Sqrt": ("Sqrt",),
        "Rsqrt": ("Reciprocal", "Div"), "Reciprocal": ("Reciprocal", "Div"), "Exp": ("Exp",), "Log": ("Log",),
        "Pow": ("Pow",), "Maximum": ("Max",), "Minimum": ("Min",), "Neg": ("Neg",), "Abs": ("Abs",),
        "Erf": ("Erf",), "Mean": ("ReduceMean", "GlobalAveragePool"), "Sum": ("ReduceSum",),
        "Max": ("ReduceMax",), "Min": ("ReduceMin",), "Prod": ("ReduceProd",), "MaxPool": ("MaxPool",),
        "MaxPoolWithArgmax": ("MaxPool",), "AvgPool": ("AveragePool",), "ConcatV2": ("Concat",),
        "GatherV2": ("Gather",), "Pad": ("Pad",), "PadV2": ("Pad",), "MirrorPad": ("Pad",), "Tile": ("Tile",),
        "ResizeBilinear": ("Resize", "Upsample"), "ResizeNearestNeighbor": ("Resize", "Upsample"),
        "Floor": ("Floor",), "Ceil": ("Ceil",), "Round": ("Round",), "Sin": ("Sin",), "Cos": ("Cos",),
    }.items()
}


@dataclass(frozen=True)
class Correspondence:
    """How the ONNX node computing a TF name relates to the TF op."""

    onnx_op: str
    op_matches: bool  # the ONNX op type implements the TF op (or the TF op has no entry to check against)
    inputs_match: bool  # both read the same matched tensors
    onnx_frontier: frozenset[str]
    tf_frontier: frozenset[str]

    @property
    def same_computation(self) -> bool:
        return self.op_matches and self.inputs_match

    def describe(self, tf_op: str) -> str:
        """Why the name is not taken on its structure alone."""
        parts = []
        if not self.op_matches:
            parts.append(f"ONNX computes it with {self.onnx_op}, TensorFlow with {tf_op}")
        if not self.inputs_match:
            parts.append(f"ONNX computes it from {_names(self.onnx_frontier)}, TensorFlow from "
                         f"{_names(self.tf_frontier)}")
        return "; ".join(parts)


def _names(names: frozenset[str]) -> str:
    return ", ".join(sorted(names)) if names else "constants only"


def tf_frontier(tensor: str, inputs_of: Mapping[str, tuple[str, ...]], stops: set[str]) -> frozenset[str]:
    """The tensors in `stops` that the TF tensor reads, directly or through activations not in `stops`;
    `inputs_of` holds every activation's data inputs (constants are not in it and are left out)."""
    found: set[str] = set()
    seen: set[str] = set()
    pending = list(inputs_of.get(tensor, ()))
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        if name in stops:
            found.add(name)
        elif name in inputs_of:
            pending.extend(inputs_of[name])
    return frozenset(found)


def correspondence(tensor: str, tf_op: str, node: OnnxNode, graph: OnnxGraph,
                   inputs_of: Mapping[str, tuple[str, ...]], matched: Mapping[str, str]) -> Correspondence:
    """How `node` (computing `tensor` in ONNX) relates to the TF op computing it, given the tensors matched so far
    (`matched`: ONNX name -> TF name, graph inputs included)."""
    allowed = ONNX_OPS_FOR.get(tf_op)
    op_matches = allowed is None or node.op_type in allowed
    onnx_side = frozenset(matched[name] for name in graph.frontier(node, set(matched)))
    tf_side = tf_frontier(tensor, inputs_of, set(matched.values()))
    return Correspondence(onnx_op=node.op_type, op_matches=op_matches, inputs_match=onnx_side == tf_side,
                          onnx_frontier=onnx_side, tf_frontier=tf_side)


def unnamed_stand_ins(graph: OnnxGraph, tf_ops: Mapping[str, str], inputs_of: Mapping[str, tuple[str, ...]],
                      graph_inputs: set[str]) -> dict[str, str]:
    """TF tensor -> the unnamed ONNX tensor that computes it, where tf2onnx fused or split the TF op:
    - a name it dropped when it fused ops (MatMul + BiasAdd into one Gemm named after neither): the ONNX tensor is
      the one the TF tensor's only consumer reads, when that consumer's name is in ONNX, its node reads exactly one
      activation, and the node computing that activation implements the TF op;
    - a name it left on a partial result when it split an op (Rsqrt into Sqrt, then Reciprocal under another
      name): the ONNX tensor is the output of the op downstream, through unnamed tensors, that implements it."""
    named = set(graph.producer) & set(tf_ops)
    found: dict[str, str] = {}
    consumers: dict[str, list[str]] = {}
    for tensor, inputs in inputs_of.items():
        for name in inputs:
            consumers.setdefault(name, []).append(tensor)
    for tensor, op_type in tf_ops.items():
        allowed = ONNX_OPS_FOR.get(op_type)
        if allowed is None:
            continue
        if tensor in named:
            completed = _completing_output(graph, tensor, allowed, set(tf_ops))
            if completed:
                found[tensor] = completed
            continue
        readers = consumers.get(tensor, [])
        if len(readers) != 1 or readers[0] not in named:
            continue
        reader = readers[0]
        activations = [n for n in inputs_of.get(reader, ()) if n in inputs_of or n in graph_inputs]
        if tensor not in activations:
            continue
        node = graph.computing_node(reader)
        read = [n for n in node.inputs if n and n not in graph.constants] if node is not None else []
        # The reader's other activations (a Concat's other parts: a U-Net's skip beside its resize) under their TF
        # names, through the emulation's casts; the one read left unnamed is the fused op's output.
        carried = [_carried_name(graph, n, tf_ops) for n in read]
        others = [n for n in activations if n != tensor]
        unnamed = [n for n, name in zip(read, carried, strict=True) if name not in tf_ops and name not in graph.inputs]
        if len(read) != len(activations) or sorted(c for c in carried if c in others) != sorted(others) \
                or len(unnamed) != 1:
            continue
        source = graph.computing_node(unnamed[0])
        if source is not None and source.op_type in allowed:
            found[tensor] = unnamed[0]
    return found


def _carried_name(graph: OnnxGraph, name: str, tf_names: Mapping[str, str]) -> str:
    """The TF name a tensor carries through the casts, identities and transposes after it was made (the fp16
    emulation's Cast pair), or its own name."""
    while name not in tf_names:
        node = graph.producer.get(name)
        if node is None or node.op_type not in SEE_THROUGH or not node.inputs:
            break
        name = node.inputs[0]
    return name


def _completing_output(graph: OnnxGraph, tensor: str, allowed: frozenset[str], tf_names: set[str]) -> str:
    """Where the ONNX node computing `tensor` is not of an `allowed` type: the output of the first node downstream,
    through unnamed tensors only, that is; "" when there is none (or the node is of an allowed type)."""
    node = graph.computing_node(tensor)
    if node is None or node.op_type in allowed:
        return ""
    pending = [tensor]
    seen: set[str] = set()
    while pending:
        current = pending.pop(0)
        for reader in graph.readers.get(current, ()):
            if reader.name in seen:
                continue
            seen.add(reader.name)
            outputs = [name for name in reader.outputs if name]
            if any(name in tf_names for name in outputs):
                continue  # a named tensor: the TF op is not being completed here
            if reader.op_type in allowed and len(outputs) == 1:
                return outputs[0]
            pending.extend(outputs)
    return ""
