"""Which ONNX nodes tf2onnx named after an ONNX op type rather than after the TF node it converts.

tf2onnx names a node it makes for a TF node ``<tf name>__<n>``, and a node it makes with no name given (a
transpose its optimiser inserts, a helper some handlers add) ``<ONNX op type>__<n>``. In a pb with a TF node named
like an ONNX op type (an unnamed ``tf.cast`` is ``Cast``, an unnamed ``tf.reshape`` is ``Reshape``) the two look
the same; recording the second kind while tf2onnx converts tells them apart. The record travels in the ONNX
model's metadata, so that later readers (tune-precision's op list) attribute nodes as the emulation did.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

TYPE_NAMED_KEY = "infer.tf2onnx_type_named_nodes"
_NAME_POSITION = 5  # make_node(op_type, inputs, attr, output_count, outputs, skip_conversion, op_name_scope, name)
_patching = threading.Lock()


@contextmanager
def recording_type_named_nodes() -> Iterator[set[str]]:
    """While open, the names of the nodes tf2onnx's Graph.make_node names itself (no name passed) collect in the
    set it yields."""
    from tf2onnx.graph import Graph

    made: set[str] = set()
    original = Graph.make_node

    def make_node(self: Any, op_type: str, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        given = args[_NAME_POSITION] if len(args) > _NAME_POSITION else kwargs.get("name")
        node = original(self, op_type, inputs, *args, **kwargs)
        if given is None:
            made.add(node.name)
        return node

    with _patching:
        Graph.make_node = make_node
        try:
            yield made
        finally:
            Graph.make_node = original


def store_type_named(model: Any, names: set[str]) -> None:
    """Records, in the model's metadata, those of `names` still in the graph."""
    present = sorted(names & {node.name for node in model.graph.node})
    entry = next((p for p in model.metadata_props if p.key == TYPE_NAMED_KEY), None) or model.metadata_props.add()
    entry.key = TYPE_NAMED_KEY
    entry.value = json.dumps(present)


def read_type_named(model: Any) -> frozenset[str]:
    """The recorded names; empty for a model converted before they were recorded."""
    for prop in model.metadata_props:
        if prop.key == TYPE_NAMED_KEY:
            return frozenset(json.loads(prop.value))
    return frozenset()
