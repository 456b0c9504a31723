"""Ascend IR op types (for TensorFlow models mostly the TF op types) and the ONNX nodes the stand-in computes them with.

ATC's per-op controls name ops by the original model's node names or by Ascend IR op type. The stand-in runs
tf2onnx's ONNX graph, where one TF node becomes one or a few ONNX nodes: the node of the same name plus helpers
named ``<tf name>__<n>`` (transposes around a convolution, casts). `ONNX_OPS_OF_TF` says, per TF op type, which
ONNX op types tf2onnx emits for it (the op that computes first); the emulation applies a control to every ONNX node
of the named TF node, so the table documents the mapping and is the vocabulary an ``OpType::`` entry is checked
against (together with the types present in the pb).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from binio.texts import close_matches

ONNX_OPS_OF_TF: Mapping[str, tuple[str, ...]] = {
    # convolutions and products: the cube unit's ops
    "Conv2D": ("Conv", "Transpose"), "Conv3D": ("Conv", "Transpose"),
    "DepthwiseConv2dNative": ("Conv", "Transpose"), "Conv2DBackpropInput": ("ConvTranspose", "Transpose"),
    "MatMul": ("MatMul", "Gemm"), "BatchMatMul": ("MatMul",), "BatchMatMulV2": ("MatMul",),
    "BatchMatMulV3": ("MatMul",),
    # element-wise arithmetic
    "Add": ("Add",), "AddV2": ("Add",), "AddN": ("Sum", "Add"), "BiasAdd": ("Add",), "Sub": ("Sub",),
    "Mul": ("Mul",), "RealDiv": ("Div", "Mul"), "Div": ("Div",), "Square": ("Mul",),
    "SquaredDifference": ("Sub", "Mul"),
    "Sqrt": ("Sqrt",), "Rsqrt": ("Sqrt", "Reciprocal"), "Reciprocal": ("Reciprocal",), "Pow": ("Pow",),
    "Exp": ("Exp",), "Log": ("Log",), "Log1p": ("Add", "Log"), "Neg": ("Neg",), "Abs": ("Abs",),
    "Maximum": ("Max",), "Minimum": ("Min",), "Tanh": ("Tanh",), "Sigmoid": ("Sigmoid",), "Erf": ("Erf",),
    # activations
    "Relu": ("Relu",), "Relu6": ("Clip",), "LeakyRelu": ("LeakyRelu",), "Elu": ("Elu",), "Selu": ("Selu",),
    "Softplus": ("Softplus",), "Softsign": ("Softsign",),
    # reductions and normalisations
    "Sum": ("ReduceSum",), "Mean": ("ReduceMean",), "Prod": ("ReduceProd",), "Max": ("ReduceMax",),
    "Min": ("ReduceMin",), "Softmax": ("Softmax",), "LogSoftmax": ("LogSoftmax",),
    "FusedBatchNorm": ("BatchNormalization",), "FusedBatchNormV2": ("BatchNormalization",),
    "FusedBatchNormV3": ("BatchNormalization",), "L2Loss": ("ReduceSumSquare", "Mul"),
    # pooling
    "MaxPool": ("MaxPool", "Transpose"), "AvgPool": ("AveragePool", "Transpose"),
    "MaxPoolWithArgmax": ("MaxPool", "Transpose"),
    # moving values
    "Reshape": ("Reshape",), "Transpose": ("Transpose",), "Squeeze": ("Squeeze",), "ExpandDims": ("Unsqueeze",),
    "ConcatV2": ("Concat",), "Pack": ("Unsqueeze", "Concat"), "Split": ("Split",), "SplitV": ("Split",),
    "Slice": ("Slice",), "StridedSlice": ("Slice",), "GatherV2": ("Gather",), "Pad": ("Pad",), "Tile": ("Tile",),
    "Cast": ("Cast",), "Identity": ("Identity",),
}
def known_op_types(graph_types: Iterable[str]) -> frozenset[str]:
    """The op types an ``OpType::`` entry may name: the table's and those the pb holds."""
    return frozenset(ONNX_OPS_OF_TF) | frozenset(graph_types)


def closest(word: str, choices: Iterable[str], count: int = 3) -> str:
    """``; closest: a, b`` for a refusal message, or "" when nothing is near."""
    found = close_matches(word, sorted(set(choices)), count=count, cutoff=0.5)
    if not found:
        lowered = {c.lower(): c for c in choices}
        found = [lowered[w] for w in close_matches(word.lower(), sorted(lowered), count=count, cutoff=0.5)]
    return f"; closest: {', '.join(found)}" if found else ""
