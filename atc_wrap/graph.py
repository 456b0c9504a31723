"""Reading a frozen pb as a GraphDef, without importing the rest of TensorFlow's runtime into callers' modules."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from atc_wrap.errors import ConvertError


def read_graph_def(pb: Path) -> Any:
    """The pb's ``GraphDef`` protobuf; a file that is not one is refused by name."""
    from google.protobuf.message import DecodeError
    from tensorflow.core.framework import graph_pb2

    graph_def = graph_pb2.GraphDef()
    try:
        graph_def.ParseFromString(Path(pb).read_bytes())
    except FileNotFoundError:
        raise ConvertError(f"{pb}: no such frozen graph") from None
    except DecodeError as exc:
        raise ConvertError(f"{pb}: not a TensorFlow GraphDef ({exc})") from None
    return graph_def
