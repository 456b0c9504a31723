"""What a frozen graph holds that its consumers may not take: ops ATC's TensorFlow 1.15 parser does not know,
and random ops, whose numbers no converted model reproduces."""

from __future__ import annotations

import re

from binio.graph_types import GraphDef

# Functional control flow and function calls: TF 1.15 graphs express these as Switch/Merge/Enter/Exit and plain
# ops, and ATC's parser reads such graphs; a function library is what TF 2.x adds.
WHILE_OPS = frozenset({"While", "StatelessWhile"})  # tf.while_loop under control flow v2 (dynamic_rnn's loop)
FUNCTIONAL_OPS = WHILE_OPS | frozenset({"If", "StatelessIf", "Case", "StatelessCase", "PartitionedCall",
                                        "StatefulPartitionedCall", "RemoteCall", "SymbolicGradient"})
# Ops added to TensorFlow after 1.15 that TF 2.x may write into an inference graph: a hand-kept list, not the
# whole difference between the two op registries. TF 1.15 does not install on the Pythons tf2onnx needs, and
# TensorFlow's registry records no op's first version (an OpDef has a deprecation version only; the op history
# files are in its source tree, not in the wheel), so that difference cannot be computed here; functional ops
# above are the ones TF 2.x writes most.
NEWER_THAN_TF115 = frozenset({
    "StatelessRandomUniformV2", "StatelessRandomNormalV2", "StatelessRandomUniformIntV2",
    "StatelessRandomUniformFullIntV2", "StatelessTruncatedNormalV2", "StatelessRandomGetKeyCounter",
    "StatelessRandomGetKeyCounterAlg", "StatelessRandomGetAlg", "StatelessShuffle", "RandomIndexShuffle",
    "MatrixDiagV3", "MatrixDiagPartV3", "MatrixSetDiagV3", "BatchMatMulV3", "DenseBincount", "SparseBincount",
    "RaggedBincount", "ImageProjectiveTransformV3", "Xlog1py", "UniformQuantize", "UniformDequantize",
    "UniformRequantize", "UniformQuantizedDot", "UniformQuantizedAdd", "UniformQuantizedConvolution",
    "XlaCallModule", "CumulativeLogsumexp", "QuantizeAndDequantizeV4", "Erfinv", "Ndtri", "CheckNumericsV2",
    "DebugIdentityV2", "TensorScatterMax", "TensorScatterMin", "StatelessParameterizedTruncatedNormal",
})
_RANDOM_OP = re.compile(r"Random|Multinomial|TruncatedNormal")


def unknown_to_tf115(graph_def: GraphDef) -> dict[str, str]:
    """Node -> op type, for every node ATC's TF 1.15 parser would not know: functional control flow, calls of
    library functions, ops newer than TF 1.15."""
    functions = {f.signature.name for f in graph_def.library.function}
    return {node.name: node.op for node in graph_def.node
            if node.op in FUNCTIONAL_OPS or node.op in NEWER_THAN_TF115 or node.op in functions}


def random_ops(graph_def: GraphDef) -> dict[str, str]:
    """Node -> op type, for every node that draws random numbers (in the graph or in a function it calls)."""
    found = {node.name: node.op for node in graph_def.node if _RANDOM_OP.search(node.op)}
    for function in graph_def.library.function:
        found.update({f"{function.signature.name}/{node.name}": node.op for node in function.node_def
                      if _RANDOM_OP.search(node.op)})
    return found


def describe(nodes: dict[str, str], limit: int = 5) -> str:
    """``a (RandomUniform), b (If) and 3 more``."""
    items = [f"{name} ({op})" for name, op in sorted(nodes.items())]
    return ", ".join(items[:limit]) + (f" and {len(items) - limit} more" if len(items) > limit else "")
