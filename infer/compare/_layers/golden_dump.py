"""TensorFlow's intermediate tensors as msaccucmp's golden files: one .npy per tensor, named as msaccucmp looks them
up (`{node with / and . as _}.{output index}.{16-digit timestamp}.npy`)."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from binio.atomic import atomic_path
from binio.spec import node_name, output_index


def golden_file_name(tensor: str, timestamp: int) -> str:
    """msaccucmp's golden naming: ``scope/conv.1:0`` -> ``scope_conv_1.0.<timestamp>.npy``. It looks an op's file up
    under the op name with ``/`` and ``.`` both made ``_`` (dump_parse/dump.py, DumpInfo.get_op_dump_file); the
    timestamp has the 16 digits it sorts dumps by (microseconds since 1970)."""
    return f"{node_name(tensor).replace('/', '_').replace('.', '_')}.{output_index(tensor)}.{timestamp}.npy"


def dump_golden_tensors(values: dict[str, np.ndarray], folder: Path) -> tuple[Path, ...]:
    """Writes every tensor as ``op_name.output_index.timestamp.npy`` (atomically, one timestamp per dump)."""
    folder = Path(folder)
    timestamp = int(time.time() * 1_000_000)
    written = []
    for name, value in values.items():
        path = folder / golden_file_name(name, timestamp)
        with atomic_path(path) as tmp, open(tmp, "wb") as handle:
            np.save(handle, value, allow_pickle=False)
        written.append(path)
    return tuple(written)
