"""Ascend hosts reached over SSH: ATC, msame and ais_bench run there, infer's stages here (docs/remote.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from infer._exports import lazy_exports

if TYPE_CHECKING:
    from infer.remote.npu_smi import NpuChip, NpuSmiInfo, parse_npu_smi_info
    from infer.remote.options import RemoteError, RemoteOptions
    from infer.remote.record import RemoteRecord, Traffic

__all__ = ["NpuChip", "NpuSmiInfo", "RemoteError", "RemoteOptions", "RemoteRecord", "Traffic", "parse_npu_smi_info"]

__getattr__, __dir__ = lazy_exports(__name__, {
    "NpuChip": "infer.remote.npu_smi",
    "NpuSmiInfo": "infer.remote.npu_smi",
    "RemoteError": "infer.remote.options",
    "RemoteOptions": "infer.remote.options",
    "RemoteRecord": "infer.remote.record",
    "Traffic": "infer.remote.record",
    "parse_npu_smi_info": "infer.remote.npu_smi",
})
