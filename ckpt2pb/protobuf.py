"""Reading TensorFlow's protobuf files (a frozen GraphDef, a meta graph, a SavedModel): the one reader of each."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

from ckpt2pb.errors import SourceError

Message = TypeVar("Message")


def parse_protobuf(message: Message, path: Path, what: str) -> Message:
    """Fills `message` from the file at `path`; a file that cannot be read or does not parse as `what` (a
    "frozen GraphDef", a "meta graph") is refused by name, with protobuf's own reason as the hint."""
    from google.protobuf.message import DecodeError

    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise SourceError(f"{path}: cannot read ({exc.strerror})") from None
    try:
        message.ParseFromString(data)  # type: ignore[attr-defined]
    except (DecodeError, RuntimeWarning, ValueError) as exc:
        raise SourceError(f"{path}: not a {what} (the protobuf does not parse)", hint=str(exc)) from None
    return message


def read_graph_def(pb: Path) -> Any:
    """The frozen pb at `pb` as a ``GraphDef``: what freeze reads, what convert hands to atc_wrap, and what the
    TensorFlow runner and the layer-by-layer comparison run."""
    from tensorflow.core.framework import graph_pb2

    return parse_protobuf(graph_pb2.GraphDef(), pb, "frozen GraphDef")
