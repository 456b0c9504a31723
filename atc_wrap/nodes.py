"""Checks that the contract's input and output nodes exist in the pb before any converter sees it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from atc_wrap.errors import ConvertError
from binio.graph_types import GraphDef
from binio.spec import TensorSpec


def check_nodes_exist(graph_def: GraphDef, pb: Path, inputs: Sequence[TensorSpec],
                      outputs: Sequence[TensorSpec]) -> None:
    """Refuses, naming every one at once, tensors whose node is not in the graph (ATC's E10016, caught early)."""
    ops = {node.name: node.op for node in graph_def.node}
    missing = [spec.name for spec in (*inputs, *outputs) if spec.node not in ops]
    if missing:
        raise ConvertError(
            f"{pb}: no node for {', '.join(missing)} in the graph ({len(ops)} nodes)",
            hint="re-run infer freeze, or infer inspect the pb to see its node names",
        )
    not_inputs = [f"{spec.node} ({ops[spec.node]})" for spec in inputs if ops[spec.node] != "Placeholder"]
    if not_inputs:
        raise ConvertError(f"{pb}: input node {', '.join(not_inputs)} is not a Placeholder",
                           hint="re-run infer freeze so the inputs are placeholders")
