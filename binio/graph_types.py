"""The names of the framework objects the layers hand each other, for annotations.

`GraphDef` is TensorFlow's `GraphDef` protobuf (a frozen pb as read by `ckpt2pb.protobuf.read_graph_def`), which
atc_wrap's converters and checks take from their caller. It is `Any` because no precise type is to be had:
TensorFlow ships no type information (mypy skips it, pyproject.toml), and naming its class would import TensorFlow
into modules that must load without it. The alias says what the value is where `Any` said nothing.
"""

from __future__ import annotations

from typing import Any

GraphDef = Any  # tensorflow.compat.v1.GraphDef
