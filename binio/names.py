"""TensorFlow's tensor and node names (``scope/op:1``, ``scope/op``), as plain strings: standard library only, so the
options and thresholds that name outputs import no numpy (binio.spec re-exports these)."""

from __future__ import annotations


def node_name(tensor_or_node: str) -> str:
    """``scope/op:1`` -> ``scope/op``; a node name is returned as it is (a leading ``^`` is dropped)."""
    name = tensor_or_node.lstrip("^")
    head, sep, tail = name.rpartition(":")
    return head if sep and tail.isdigit() else name


def tensor_name(tensor_or_node: str) -> str:
    """``scope/op`` -> ``scope/op:0``; a tensor name is returned as it is."""
    name = tensor_or_node.lstrip("^")
    head, sep, tail = name.rpartition(":")
    return name if sep and tail.isdigit() and head else f"{name}:0"
