"""Ascend hosts reached over SSH: ATC, msame and ais_bench run there, infer's stages here (docs/remote.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from infer._exports import lazy_exports

if TYPE_CHECKING:
    from infer.remote._atc import AtcOnHost, atc_on_host
    from infer.remote._ssh import held_connections
    from infer.remote._tools import ToolsOnHost
    from infer.remote.npu_smi import NpuChip, NpuSmiInfo, parse_npu_smi_info
    from infer.remote.options import RemoteError, RemoteOptions, remote_given
    from infer.remote.record import RemoteRecord, Traffic, merged_remote
    from infer.remote.survey import HostSurvey, survey_host

__all__ = ["AtcOnHost", "HostSurvey", "NpuChip", "NpuSmiInfo", "RemoteError", "RemoteOptions", "RemoteRecord",
           "ToolsOnHost", "Traffic", "atc_on_host", "held_connections", "merged_remote", "parse_npu_smi_info",
           "remote_given", "survey_host"]

__getattr__, __dir__ = lazy_exports(__name__, {
    "AtcOnHost": "infer.remote._atc",
    "HostSurvey": "infer.remote.survey",
    "survey_host": "infer.remote.survey",
    "atc_on_host": "infer.remote._atc",
    "remote_given": "infer.remote.options",
    "NpuChip": "infer.remote.npu_smi",
    "NpuSmiInfo": "infer.remote.npu_smi",
    "RemoteError": "infer.remote.options",
    "RemoteOptions": "infer.remote.options",
    "RemoteRecord": "infer.remote.record",
    "ToolsOnHost": "infer.remote._tools",
    "held_connections": "infer.remote._ssh",
    "merged_remote": "infer.remote.record",
    "Traffic": "infer.remote.record",
    "parse_npu_smi_info": "infer.remote.npu_smi",
})
