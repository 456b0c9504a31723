"""Duplicate nodes tf2onnx merges: one survivor chosen the same way in every run, and the TF twins it stands for.

tf2onnx's optimizer merges nodes of the same type, inputs and attributes into one (google-research/bert builds the
attention mask adder ``(1 - mask) * -10000`` once per layer: the layers' twins become one Sub and one Mul). Which
twin survives is the first in its graph's node order, which follows object addresses in its topological sort:
neither the pb nor PYTHONHASHSEED fixes it, so the same pb converted four times gave four ONNX files, and a per-op
control naming the twin that happened to be merged away applied to nothing. While tf2onnx converts, the merge here
keeps, of each group of twins, the one using most outputs (tf2onnx's own rule) and then the first by name in natural
order (``layer_2`` before ``layer_10``; tf2onnx's own numbers in a name count last: `survivor_key`); each node it
removes is recorded with its survivor, and after the conversion the TF nodes merged into each survivor travel in the
model's metadata. The emulation applies a control naming any of them to the survivor, and tune-precision writes
every twin of an op it keeps (ATC sees them all).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from atc_wrap.standin._generated_names import GENERATED_NUMBER

MERGED_KEY = "infer.tf2onnx_merged_nodes"
_DIGITS = re.compile(r"(\d+)")
_patching = threading.Lock()


def natural_key(name: str) -> tuple[tuple[int, str], ...]:
    """``layer_2/sub`` before ``layer_10/sub``: digit runs compare as numbers, the rest as text."""
    return tuple((1, f"{int(part):020d}") if part.isdigit() else (0, part) for part in _DIGITS.split(name) if part)


def survivor_key(name: str) -> tuple[tuple[tuple[int, str], ...], tuple[tuple[int, str], ...]]:
    """The order twins are kept in: by `natural_key` with tf2onnx's own numbers (``copy__1000005/``) left out
    first, then as named. Those numbers are drawn in an order that follows object addresses: an LSTM's forward and
    backward ``while/Less`` copies (``copy__1000005/blstm/forward_1/...``, ``copy__1000012/blstm/backward_1/...``)
    were kept one or the other from one run to the next, and the ONNX bytes differed. Twins whose names differ in
    those numbers alone (two copies of one TF node) are still ordered by them; after the renumbering
    (`_generated_names`) either survivor is spelled the same, so the bytes do not depend on which (a guess held by
    the registry's byte-identity test, not proven for every graph)."""
    return natural_key(GENERATED_NUMBER.sub("", name)), natural_key(name)


@contextmanager
def merging_twins_by_name() -> Iterator[dict[str, str]]:
    """While open, tf2onnx's merge of duplicate nodes keeps the twin using most outputs, then the first by
    `natural_key`; the dict it yields fills with each removed node's name -> its survivor's name."""
    from tf2onnx.optimizer.merge_duplicated_nodes_optimizer import MergeDuplicatedNodesOptimizer

    merged: dict[str, str] = {}
    original = MergeDuplicatedNodesOptimizer._merge_nodes_that_are_duplicated

    def merge(self: Any, nodes_to_process: list[Any], graph: Any) -> None:
        # tf2onnx sorts by output count, in place and stably (reverse=True keeps ties in order): given this order,
        # its survivor is the first here.
        nodes_to_process.sort(key=lambda node: survivor_key(node.name))
        nodes_to_process.sort(key=lambda node: len(node.output), reverse=True)
        survivor = nodes_to_process[0].name
        twins = [node.name for node in nodes_to_process[1:]]
        original(self, nodes_to_process, graph)
        merged.update({twin: survivor for twin in twins if graph.get_node_by_name(twin) is None})

    with _patching:
        MergeDuplicatedNodesOptimizer._merge_nodes_that_are_duplicated = merge
        try:
            yield merged
        finally:
            MergeDuplicatedNodesOptimizer._merge_nodes_that_are_duplicated = original


def store_merged(model: Any, merged: Mapping[str, str], renamed: Callable[[str], str],
                 tf_node_of: Callable[[str], str | None]) -> None:
    """Records in `model`'s metadata, for each node of its main graph that twins were merged into, the TF nodes of
    those twins (`tf_node_of` gives a tf2onnx node name's TF node, None for a node of its own); `merged` holds the
    names during the conversion, `renamed` gives a name's final spelling (tf2onnx's numbers renumbered)."""
    present = {node.name for node in model.graph.node}
    twins: dict[str, set[str]] = {}
    for removed in merged:
        survivor = removed
        seen = {removed}
        while survivor in merged and merged[survivor] not in seen:  # merged into a node merged in turn
            survivor = merged[survivor]
            seen.add(survivor)
        tf = tf_node_of(removed)
        final = renamed(survivor)
        if tf is not None and final in present and tf_node_of(survivor) != tf:
            twins.setdefault(final, set()).add(tf)
    entry = next((p for p in model.metadata_props if p.key == MERGED_KEY), None)
    if not twins:
        if entry is not None:
            model.metadata_props.remove(entry)
        return
    entry = entry or model.metadata_props.add()
    entry.key = MERGED_KEY
    entry.value = json.dumps({name: sorted(tfs) for name, tfs in sorted(twins.items())})


def read_merged(model: Any) -> dict[str, tuple[str, ...]]:
    """ONNX node -> the TF nodes merged into it (besides its own); empty for a model converted before they were
    recorded, or without twins."""
    for prop in model.metadata_props:
        if prop.key == MERGED_KEY:
            return {name: tuple(tfs) for name, tfs in json.loads(prop.value).items()}
    return {}


def tf_twins(model: Any, origin: Callable[[str], str | None]) -> dict[str, tuple[str, ...]]:
    """TF node -> the TF nodes merged into its ONNX node (`origin`: an ONNX node's TF node), for keep_dtype files
    that must name every twin of an op they keep."""
    found: dict[str, tuple[str, ...]] = {}
    for survivor, merged in read_merged(model).items():
        tf = origin(survivor)
        if tf is not None:
            found[tf] = tuple(sorted({*found.get(tf, ()), *merged}))
    return found
