"""Reading TensorFlow's protobuf files (a frozen GraphDef, a meta graph, a SavedModel): the one reader of each.

A file is refused before it is read whole when it cannot be what it is read as: a FIFO or device, an empty file,
more bytes than protobuf parses (2 GiB), a first byte that is no field of the message (a zip, an HDF5 file, text).
A graph is then checked for what TensorFlow would crash on (`ckpt2pb.wellformed`) and classified for ops that act
on the host (`ckpt2pb.host_ops`) before anything imports it.
"""

from __future__ import annotations

import enum
import os
from pathlib import Path
from typing import Any, TypeVar

from binio.errors import excerpt
from binio.limits import PROTOBUF_LIMIT
from binio.memory import format_bytes
from binio.regular import refuse_special
from ckpt2pb.errors import SourceError
from ckpt2pb.host_ops import HostOp, find_host_ops, make_inert, refuse_host_ops
from ckpt2pb.wellformed import check_graph_def

Message = TypeVar("Message")

# The first byte of each message as TensorFlow writes it: the tag of one of its fields (field number << 3 | wire type).
_FIRST_TAGS = {
    "GraphDef": frozenset({0x0A, 0x12, 0x18, 0x22}),  # node, library, version, versions
    "MetaGraphDef": frozenset({0x0A, 0x12, 0x1A, 0x22, 0x2A, 0x32, 0x3A}),  # meta_info_def ... object_graph_def
    "SavedModel": frozenset({0x08, 0x12}),  # saved_model_schema_version, meta_graphs
}
_MAGIC = ((b"PK\x03\x04", "a zip archive (a .keras file?)"), (b"\x89HDF", "an HDF5 file (a Keras .h5?)"),
          (b"\x1f\x8b", "a gzip file"), (b"IMOD", "an Ascend om file"), (b"node", "text (a .pbtxt?)"),
          (b"{", "text (JSON?)"))


class HostOpPolicy(enum.Enum):
    """What reading a graph does about ops that act on the host (`ckpt2pb.host_ops`)."""

    REFUSE = "refuse"  # refused by name before anything imports it: a graph about to run
    ALLOW = "allow"  # the user trusts it (--allow-host-ops): read as it is
    INERT = "inert"  # read to be looked at, not run: barriers keep the import from evaluating them

    @staticmethod
    def of(allow: bool) -> HostOpPolicy:
        return HostOpPolicy.ALLOW if allow else HostOpPolicy.REFUSE


def _checked_bytes(path: Path, what: str, message: str) -> bytes:
    """The bytes of `path`, refused first when it is not a regular file, is empty, is larger than protobuf parses or
    starts with a byte no `message` starts with."""
    refuse_special(path, what)
    try:
        size = os.stat(path).st_size
        if size == 0:
            raise SourceError(f"{path}: an empty file (0 bytes); expected a {what}")
        if size > PROTOBUF_LIMIT:
            raise SourceError(f"{path}: {format_bytes(size)}, larger than protobuf reads "
                              f"({format_bytes(PROTOBUF_LIMIT)}); not a {what}")
        with open(path, "rb") as handle:
            head = handle.read(16)
            if head[0] not in _FIRST_TAGS[message]:
                kind = next((name for magic, name in _MAGIC if head.startswith(magic)), "")
                raise SourceError(f"{path}: not a {what} (starts with {excerpt(head)}" +
                                  (f": {kind})" if kind else ")"))
            return head + handle.read()
    except OSError as exc:
        raise SourceError(f"{path}: cannot read ({exc.strerror})") from None


def parse_protobuf(message: Message, path: Path, what: str) -> Message:
    """Fills `message` from the file at `path`; a file that cannot be read or does not parse as `what` (a
    "frozen GraphDef", a "meta graph") is refused by name, with protobuf's own reason as the hint."""
    from google.protobuf.message import DecodeError

    data = _checked_bytes(Path(path), what, type(message).__name__)
    try:
        message.ParseFromString(data)  # type: ignore[attr-defined]
    except (DecodeError, RuntimeWarning, ValueError, RecursionError) as exc:
        raise SourceError(f"{path}: not a {what} (the protobuf does not parse)", hint=excerpt(str(exc), 200)) from None
    return message


def checked_graph(graph_def: Any, origin: object, host_ops: HostOpPolicy, *, saver_def: Any = None
                  ) -> tuple[HostOp, ...]:
    """Checks a graph just read before anything imports it: refuses an empty one and what TensorFlow would crash on,
    then applies `host_ops`. Returns the ops that act on the host (those of `saver_def`'s saver marked)."""
    if not graph_def.node:
        raise SourceError(f"{origin}: the graph holds no nodes", hint="the file is empty or was not written by "
                                                                       "TensorFlow's exporter")
    check_graph_def(graph_def, origin)
    if host_ops is HostOpPolicy.INERT:
        return make_inert(graph_def, saver_def=saver_def)
    found = find_host_ops(graph_def, saver_def=saver_def)
    refuse_host_ops(found, origin, allow=host_ops is HostOpPolicy.ALLOW)
    return found


def read_graph_def(pb: Path, host_ops: HostOpPolicy = HostOpPolicy.REFUSE) -> Any:
    """The frozen pb at `pb` as a ``GraphDef``: what freeze reads, what convert hands to atc_wrap, and what the
    TensorFlow runner and the layer-by-layer comparison run. A graph holding ops that act on the host is refused
    (`HostOpPolicy.REFUSE`) unless the caller was allowed them or only looks at it (`INERT`)."""
    from tensorflow.core.framework import graph_pb2

    graph_def = parse_protobuf(graph_pb2.GraphDef(), pb, "frozen GraphDef")
    checked_graph(graph_def, pb, host_ops)
    return graph_def
